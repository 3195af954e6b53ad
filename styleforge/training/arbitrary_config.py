"""Settings of one arbitrary-style training run (`styleforge train-arbitrary`; every flag a field).

Defaults are the recipe of docs/arbitrary.md: batch 8 per GPU of 256² crops, Adam 1e-4 with a
500-step warm-up and a cosine decay to 10 %, loss weights content 1, style 1, local 0.3
(AdaAttN's 10 : 3 between style and local), identity 25 (pixels, 0–1) and 0.5 (features),
colour and grid 0 (the shipped recipe; dev/device/train_arbitrary.sh sets them).
Not the loop (`arbitrary_trainer.py`) and not the data (`arbitrary_data.py`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ..models.arbitrary.config import ArbitraryConfig

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "bf16")
# The held-out paintings of docs/arbitrary.md (stems, prefix match): never trained on.
HELD_OUT = ("the_scream", "composition_vii", "the_shipwreck_of_the_minotaur", "candy")


@dataclass(frozen=True)
class ArbitraryTrainConfig:
    content_dir: str = "runs/arbitrary-data/content"       # dev/device/train_arbitrary.sh stage
    style_dirs: tuple[str, ...] = ("runs/arbitrary-data/styles",)
    vgg_weights: str | None = None
    run_dir: str = "runs/arbitrary"
    out: str | None = None               # final weights (default: run_dir/arbitrary.safetensors)
    steps: int = 20_000
    batch_size: int = 8                  # per process
    image_size: int = 256
    content_size: int = 272              # photos are centre squares of this side, then cropped
    style_size: int = 512                # paintings' longer side in memory
    lr: float = 1e-4
    warmup: int = 500
    min_lr_ratio: float = 0.1
    content_weight: float = 1.0
    style_weight: float = 1.0
    gram_weight: float = 0.0
    local_weight: float = 0.3
    identity_pixel_weight: float = 25.0
    identity_feature_weight: float = 0.5
    colour_weight: float = 0.0           # SW of pixel colours, 0–255 units (arbitrary_losses.colour_loss)
    grid_weight: float = 0.0             # grid.grid_penalty of the stylized output
    hue_jitter: float = 0.0              # paintings' hue turned by up to ± this many radians
    group_power: float = 0.5
    exclude: tuple[str, ...] = HELD_OUT
    max_content: int | None = None
    model: ArbitraryConfig = field(default_factory=ArbitraryConfig)
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"              # auto: bf16 autocast on CUDA, fp32 on the CPU
    compile: bool = False
    checkpoint_every: int = 1000
    keep_checkpoints: int = 2
    resume: str | None = None            # a step_*.pt file, or "auto": the newest in run_dir
    init_weights: str | None = None      # a weights file to start from (step 0, Adam afresh) when
                                         # there is no checkpoint to resume
    sample_every: int = 1000
    log_every: int = 50
    max_seconds: float | None = None
    progress: bool = True

    def __post_init__(self):
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        for name in ("steps", "batch_size", "image_size", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be ≥ 1, got {getattr(self, name)}")
        if self.image_size % 16:
            raise ValueError(f"image_size must be a multiple of 16, got {self.image_size}")
        if self.content_size < self.image_size:
            raise ValueError(f"content_size {self.content_size} < image_size {self.image_size}")
        object.__setattr__(self, "style_dirs", tuple(self.style_dirs))
        object.__setattr__(self, "exclude", tuple(self.exclude))

    @property
    def run_path(self) -> Path:
        return Path(self.run_dir)

    @property
    def out_path(self) -> Path:
        return Path(self.out) if self.out else self.run_path / "arbitrary.safetensors"

    def settings(self) -> dict:
        d = dataclasses.asdict(self)
        d["model"] = dataclasses.asdict(self.model)
        return d

    def check_paths(self) -> None:
        for folder in (self.content_dir, *self.style_dirs):
            if not Path(folder).is_dir():
                raise FileNotFoundError(f"{folder}: no such folder (make one with "
                                        "`python dev/prepare_arbitrary_data.py`)")
        if self.vgg_weights is not None and not Path(self.vgg_weights).is_file():
            raise FileNotFoundError(f"VGG weights {self.vgg_weights}: no such file")
