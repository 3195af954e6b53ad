"""`TrainConfig`: every setting of a training run, shared by `styleforge train` and the Python API.

Every CLI flag is a field (house rule), so a run is fully described by `asdict(config)`, which is
what the checkpoints and the shipped style's metadata record. This module only describes and
checks settings; `trainer.py` acts on them.

Default loss weights follow pytorch/examples fast_neural_style (content 1e5, style 1e10), which
uses the same normalisation as ours: input /255 then ImageNet mean/std, Gram matrices divided by
C·H·W, mean-squared errors, so its balance carries over unchanged: at the start the weighted
style term dominates and falls while the content term first rises as the network learns the
painting's texture — the usual start of Johnson et al. training.
`style_size=512`: the painting's longer side during training. Brush strokes come out at the scale
they have in the painting at that size, so 512 on 256² crops gives visible strokes without
turning a photo into pure texture; pytorch/examples' default (the painting's full size, often
1000+ px) makes strokes smaller.
`style_reduction="mean"` keeps pytorch/examples' per-layer mean over the C×C Gram entries;
"frobenius" sums them as Johnson et al.'s squared Frobenius norm does, so the deep layers weigh
more and `style_weight` must shrink with it (docs/training.md "The style loss's layer weighting").
`style_layer_weights` scales each Gram layer's term (relu1_2, relu2_2, relu3_3, relu4_3) on top of
the reduction; all 1 is the loss above unchanged.
`jpeg_style` > 0 computes that share of the style term on a differentiable JPEG round trip of the
output at `jpeg_quality` (`jpeg.py`), so texture that the CLI's JPEG files lose stops paying; 0
(the default) skips it and leaves the loss bit for bit as before.
`flat_augment` > 0 gives that share of the crops a blurred flat patch beside their texture
(`flat.py`, against udnie's blotches); 0 leaves the batches untouched.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

PRECISIONS = ("auto", "fp32", "bf16")
MIN_IMAGE_SIZE = 16     # the network's reflection pads and VGG's three 2× poolings need 16×16
DEVICES = ("auto", "cpu", "cuda")
MODELS = ("full", "slim")   # models.transformer_net.MODEL_WIDTHS, named here without importing torch
STYLE_REDUCTIONS = ("mean", "frobenius")   # losses.style_loss
SLIM_INITS = ("teacher", "random")          # training/slim_init.py, or PyTorch's default init
STYLE_LAYER_COUNT = 4                       # losses.STYLE_LAYERS: relu1_2, relu2_2, relu3_3, relu4_3
DEFAULT_LAYER_WEIGHTS = (1.0,) * STYLE_LAYER_COUNT


def check_layer_weights(weights) -> tuple[float, ...]:
    """`weights` as a tuple of STYLE_LAYER_COUNT floats, each finite and ≥ 0, not all 0."""
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise ValueError(f"style_layer_weights must be {STYLE_LAYER_COUNT} numbers, got {weights!r}") from None
    if len(values) != STYLE_LAYER_COUNT:
        raise ValueError(f"style_layer_weights needs one weight per style layer (relu1_2, relu2_2, relu3_3, "
                         f"relu4_3), got {len(values)}: {values}")
    if not all(math.isfinite(v) and v >= 0 for v in values) or not any(values):
        raise ValueError(f"style_layer_weights must be finite, ≥ 0 and not all 0, got {values}")
    return values


@dataclass
class TrainConfig:
    style_image: str = ""                   # the painting
    content_dir: str = ""                   # folder of training photos
    out: str = ""                           # final weights, NAME.safetensors (fp16)
    vgg_weights: str | None = None          # torchvision-key VGG16 file; None = torchvision download
    steps: int = 4000                       # optimizer steps (batches)
    epochs: float | None = None             # if set, overrides steps: passes over the content set
    batch_size: int = 8
    image_size: int = 256                   # training crops are image_size²
    lr: float = 1e-3
    content_weight: float = 1e5
    style_weight: float = 1e10
    style_reduction: str = "mean"           # per Gram layer: mean (pytorch/examples) | frobenius (losses.py)
    style_layer_weights: tuple[float, ...] = DEFAULT_LAYER_WEIGHTS   # × each Gram layer's term, relu1_2…relu4_3
    jpeg_style: float = 0.0                 # share of the style term on a JPEG proxy of the output (jpeg.py); 0 = off
    jpeg_quality: int = 95                  # the proxy's IJG quality (the CLI writes 95, 4:4:4)
    flat_augment: float = 0.0               # share of crops given a blurred flat patch (flat.py); 0 = off
    tv_weight: float = 0.0                  # total variation of the output in [0, 1]; 0 = off
    grid_weight: float = 0.0                # the output's 4-px lattice beyond the photo's (training/grid.py); 0 = off
    stability_weight: float = 0.0           # f(T(x)+n) ≈ T(f(x)) for small shifts/zooms and noise; 0 = off
    stability_shift: float = 2.0            # px: largest random shift of the stability perturbation
    stability_zoom: float = 0.02            # largest random zoom (±) of the stability perturbation
    stability_rotate: float = 0.0           # degrees: largest random rotation (±) of it; 0 = none
    stability_noise: float = 4.0            # std of its Gaussian noise, 0–255 units
    model: str = "full"                     # full | slim (half width: models.transformer_net)
    teacher: str | None = None              # a full network (style name or weights file) to distil
    distill_weight: float = 0.0             # (output − teacher's output)² in [0, 1]; 0 = off
    slim_init: str | None = None            # teacher | random; None = teacher for slim with a teacher
    style_size: int | None = 512            # painting's longer side; None = its own size
    seed: int = 42
    checkpoint_every: int = 1000            # 0 = only at the end
    checkpoint_dir: str | None = None       # default: <out without suffix>.train/
    keep_checkpoints: int = 2               # older step_*.pt files are deleted
    resume: str | None = None               # a step_*.pt checkpoint to continue exactly
    sample_every: int = 1000                # 0 = only at the end
    sample_photos: tuple[str, ...] = ()     # empty = the photos in styleforge/assets/
    log_every: int = 50                     # losses are read back (a host sync) only this often
    device: str = "auto"
    precision: str = "auto"                 # auto = bf16 autocast on CUDA, fp32 on CPU
    channels_last: bool = True              # CUDA only
    compile: bool | None = None             # torch.compile the loss computation; None = on CUDA
    deterministic: bool = False             # deterministic kernels where PyTorch has them (slower)
    max_seconds: float | None = None        # stop cleanly (checkpoint + weights) at this budget
    max_content: int | None = None          # use only the first N photos (sorted by name)
    progress: bool = True                   # rich progress bar
    overwrite: bool = False                 # replace an existing --out and another run's checkpoints
    metadata: dict[str, str] = field(default_factory=dict)  # style, painting, artist, licence…

    def __post_init__(self):
        self.sample_photos = tuple(self.sample_photos)
        for name in ("lr", "content_weight", "style_weight", "tv_weight", "grid_weight", "epochs", "max_seconds",
                     "distill_weight"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):   # NaN passes every < and > test
                raise ValueError(f"{name} must be a finite number, got {value}")
        positive = {"batch_size": self.batch_size, "image_size": self.image_size, "lr": self.lr,
                    "log_every": self.log_every, "keep_checkpoints": self.keep_checkpoints}
        for name, value in positive.items():
            if value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        if self.steps < 1:
            raise ValueError(f"steps must be ≥ 1 (0 would write untrained weights), got {self.steps}")
        if self.epochs is not None and self.epochs <= 0:
            raise ValueError(f"epochs must be > 0, got {self.epochs}")
        if self.image_size % 4 or self.image_size < MIN_IMAGE_SIZE:
            raise ValueError(f"image_size must be a multiple of 4 (the network's stride) and at least "
                             f"{MIN_IMAGE_SIZE}, got {self.image_size}; 256 is the usual size")
        self.style_layer_weights = check_layer_weights(self.style_layer_weights)
        if self.style_reduction not in STYLE_REDUCTIONS:
            raise ValueError(f"style_reduction must be one of {STYLE_REDUCTIONS}, got {self.style_reduction!r}")
        if not 0 <= self.jpeg_style <= 1:   # also refuses NaN
            raise ValueError(f"jpeg_style is a share of the style term, 0–1, got {self.jpeg_style}")
        if not 0 <= self.flat_augment <= 1:   # also refuses NaN
            raise ValueError(f"flat_augment is a share of each batch's crops, 0–1, got {self.flat_augment}")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError(f"jpeg_quality must be 1–100, got {self.jpeg_quality}")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.distill_weight and not self.teacher:
            raise ValueError("distill_weight needs a teacher: pass --teacher STYLE_OR_FILE")
        # Resolved here so the settings (and the weights' metadata) record what was done.
        # The teacher's channels start distillation near the teacher (docs/cpu.md "Slim network").
        if self.slim_init is None:
            self.slim_init = "teacher" if self.model == "slim" and self.teacher else "random"
        if self.slim_init not in SLIM_INITS:
            raise ValueError(f"slim_init must be one of {SLIM_INITS}, got {self.slim_init!r}")
        if self.slim_init == "teacher" and not (self.model == "slim" and self.teacher):
            raise ValueError("slim_init 'teacher' starts a slim network from its teacher's channels: "
                             "it needs --model slim and --teacher STYLE_OR_FILE")
        for name in ("content_weight", "style_weight", "tv_weight", "grid_weight", "stability_weight",
                     "stability_shift", "stability_zoom", "stability_rotate", "stability_noise", "checkpoint_every",
                     "sample_every",
                     "distill_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)}")
        if self.style_size is not None and self.style_size < 16:
            raise ValueError(f"style_size must be ≥ 16 (or None for the painting's size), got {self.style_size}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ValueError(f"max_seconds must be > 0, got {self.max_seconds}")

    def check_paths(self) -> None:
        """Everything a run needs from the disk, checked before VGG or the photos load: the style
        image decodes, the content folder has photos, the output and the checkpoint folder do not
        hold another run's work (unless `overwrite`), the resume file exists."""
        from ..io.image import load_image
        from .data import IMAGE_SUFFIXES, list_images
        if not self.style_image or not Path(self.style_image).is_file():
            raise FileNotFoundError(f"style image {self.style_image!r} does not exist")
        load_image(self.style_image)   # ImageError (a ValueError) naming the file if it is unusable
        if not self.content_dir or not Path(self.content_dir).is_dir():
            raise FileNotFoundError(f"content folder {self.content_dir!r} does not exist")
        if not list_images(self.content_dir):
            raise FileNotFoundError(f"content folder {self.content_dir} holds no photos "
                                    f"({', '.join(sorted(IMAGE_SUFFIXES))})")
        if not self.out.lower().endswith(".safetensors"):
            raise ValueError(f"--out must name a .safetensors file, got {self.out!r}")
        from ..io.atomic import unwritable_reason
        for target in (Path(self.out), self.run_dir / "step_0000000.pt"):
            why = unwritable_reason(target)
            if why:   # found now, not after hours of training
                raise ValueError(f"cannot write {target}: {why}; choose another --out or --checkpoint-dir")
        if Path(self.out).exists() and not self.overwrite:
            raise FileExistsError(f"{self.out} exists; pass --overwrite to replace it, or choose "
                                  "another --out")
        if self.resume is not None and not Path(self.resume).is_file():
            raise FileNotFoundError(f"--resume checkpoint {self.resume!r} does not exist")
        earlier = sorted(self.run_dir.glob("step_*.pt")) if self.run_dir.is_dir() else []
        if earlier and self.resume is None and not self.overwrite:
            raise FileExistsError(
                f"{self.run_dir} holds checkpoints of an earlier run ({earlier[-1].name}); continue it "
                f"with --resume {earlier[-1]}, start over with --overwrite (deletes them), or choose "
                "another --checkpoint-dir")

    @property
    def run_dir(self) -> Path:
        if self.checkpoint_dir:
            return Path(self.checkpoint_dir)
        return Path(self.out).with_suffix(".train")

    def settings(self) -> dict:
        """What shaped the weights (recorded in the shipped file); paths reduced to file names."""
        skip = {"out", "checkpoint_dir", "keep_checkpoints", "resume", "sample_every", "sample_photos",
                "log_every", "progress", "metadata", "checkpoint_every", "overwrite"}
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        for key in ("style_image", "content_dir", "vgg_weights", "teacher"):
            if out[key]:
                out[key] = Path(out[key]).name
        return out

    def to_dict(self) -> dict:
        return asdict(self)
