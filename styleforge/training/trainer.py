"""The training loop: Adam on the Johnson et al. perceptual losses, checkpoints, exact resume.

One `Trainer` trains one style. `step()` is one optimizer step and never waits on the GPU:
batches come from the device-resident content set, the weighted losses are summed on the device,
and they are read back only every `log_every` steps. On CUDA the style network runs under bf16
autocast in channels_last, the frozen VGG is stored in bf16, Adam is the fused kernel, and the
loss computation can be `torch.compile`d (one graph, shared by every Trainer in the process).

A checkpoint (`step_0001000.pt`) holds the weights, the optimizer state, the RNG states, the
step count and the history; loading it with `weights_only=True` works, and a resumed run
matches the uninterrupted one bit for bit on the CPU (batches depend only on the step number,
see `data.py`). The final weights go out through `models.checkpoint.save_checkpoint` as fp16
safetensors with the painting's metadata and the training settings. Checkpoints are written
through `io.atomic` (unique temp name, fsync, rename), so two runs never collide on a temp file;
a truncated or foreign `--resume` file is a `ValueError` naming it. After the first steps the
loop logs how long the whole run will take (on a CPU the default run takes many hours), and the
progress bar's ETA comes from the measured step time. Not here: the CLI
(`commands/train.py`), the built-in style list (`catalogue.py`), multi-GPU training.
"""
from __future__ import annotations

import functools
import logging
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..engine.backends import resolve_device
from ..io.atomic import atomic_write
from ..models.checkpoint import load_torch_file, save_checkpoint
from ..models.transformer_net import FULL_WIDTH, MODEL_WIDTHS, TransformerNet
from ..models.vgg import VGG16Features, load_vgg16
from . import samples
from .config import DEFAULT_LAYER_WEIGHTS, TrainConfig
from .data import ContentBatches, load_content, load_style_image, place
from .flat import flatten_patches
from .losses import LossTerms, Perturbation, loss_terms, random_perturbation, style_targets

log = logging.getLogger(__name__)

STATE_FORMAT = "styleforge-train-state/1"
# Settings that must match for --resume to reproduce the uninterrupted run.
ESTIMATE_AFTER = 3      # steps timed before the whole run's duration is estimated (the first warms up)
_STEP_FILE = re.compile(r"^step_(\d+)\.pt$")
RESUME_KEYS = ("style_image", "content_dir", "batch_size", "image_size", "lr", "content_weight",
               "style_weight", "tv_weight", "grid_weight", "stability_weight", "stability_shift",
               "stability_zoom", "stability_rotate", "stability_noise", "style_size", "seed", "max_content",
               "precision", "model", "teacher", "distill_weight", "flat_augment")
# What a checkpoint from before a setting existed trained with.
RESUME_DEFAULTS = {"stability_rotate": 0.0}
TERMS = ("content", "style", "tv", "stability", "grid", "distill")


@dataclass
class TrainResult:
    out: Path | None
    steps: int
    seconds: float                       # wall time of the loop in this process (incl. samples)
    images_per_s: float
    losses: dict[str, float]             # weighted, mean over the last logging window
    stopped_early: bool = False
    history: list[dict] = field(default_factory=list)


def fresh_model(seed: int, width: int = FULL_WIDTH) -> TransformerNet:
    """PyTorch's default init drawn from `seed` without touching the global RNG stream."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TransformerNet(width)


def warm_start(teacher: TransformerNet, content: torch.Tensor, width: int) -> TransformerNet:
    """The slim network cut from the teacher's channels on a few training photos (slim_init.py)."""
    from .slim_init import calibration_photos, slim_from_full
    start = time.perf_counter()
    photos = calibration_photos(content).to(next(teacher.parameters()).device)
    slim = slim_from_full(teacher, photos, width)
    log.info("slim network started from the teacher's channels (%d photos, %.1f s)", len(photos),
             time.perf_counter() - start)
    return slim


def load_teacher(name_or_path: str, device: torch.device, memory_format) -> TransformerNet:
    """The frozen network a slim one is distilled from: a built-in style name or a weights file."""
    from ..models.checkpoint import build_model
    from ..models.registry import load_style
    teacher = build_model(load_style(name_or_path))
    return teacher.to(device, memory_format=memory_format).requires_grad_(False).eval()


def amp_dtype_for(precision: str, device: torch.device) -> torch.dtype | None:
    if precision == "fp32" or (precision == "auto" and device.type != "cuda"):
        return None
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise RuntimeError("bf16 training needs a GPU with bf16 support; use --precision fp32")
    return torch.bfloat16


@functools.lru_cache(maxsize=1)
def compiled_loss_terms():
    """One compiled graph per process, so the styles trained in one run share it."""
    return torch.compile(loss_terms, dynamic=False)


def to_cpu(obj):
    """Tensors (in dicts, lists, tuples) detached onto the CPU: a checkpoint's state."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def step_checkpoints(folder: Path) -> list[tuple[int, Path]]:
    """(step, path) of the step_*.pt files in `folder`, by step number."""
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _STEP_FILE.match(p.name))]
    return sorted(found)


class Trainer:
    """Trains one style. `vgg` and `content` (uint8 N×3×S×S) may be passed in to share them
    between styles; `painting` (float 1×3×H×W, 0–255) replaces reading `config.style_image`."""

    def __init__(self, config: TrainConfig, *, vgg: VGG16Features | None = None,
                 content: torch.Tensor | None = None, painting: torch.Tensor | None = None):
        self.config = cfg = config
        if cfg.overwrite and cfg.resume is None:   # the replaced run's checkpoints would outlive ours
            for _, stale in step_checkpoints(cfg.run_dir):
                stale.unlink(missing_ok=True)
        self.device = resolve_device(cfg.device)
        self.amp_dtype = amp_dtype_for(cfg.precision, self.device)
        cuda = self.device.type == "cuda"
        self.memory_format = torch.channels_last if cuda and cfg.channels_last else torch.contiguous_format
        if cuda:
            torch.backends.cudnn.benchmark = not cfg.deterministic
            torch.backends.cudnn.deterministic = cfg.deterministic
        if cfg.deterministic:
            # warn_only: reflection-pad backward has no deterministic CUDA kernel; PyTorch warns.
            torch.use_deterministic_algorithms(True, warn_only=True)
        torch.manual_seed(cfg.seed)

        self.vgg = vgg if vgg is not None else load_vgg16(cfg.vgg_weights, self.device,
                                                          self.amp_dtype or torch.float32)
        if content is None:
            content = load_content(cfg.content_dir, cfg.image_size, cfg.seed, cfg.max_content)
        if tuple(content.shape[1:]) != (3, cfg.image_size, cfg.image_size):
            raise ValueError(f"content tensor has shape {tuple(content.shape)}, "
                             f"expected (N, 3, {cfg.image_size}, {cfg.image_size})")
        self.data = ContentBatches(place(content, self.device), cfg.batch_size, cfg.seed, self.device)
        if painting is None:
            painting = load_style_image(cfg.style_image, cfg.style_size)
        self.targets = style_targets(self.vgg, painting)

        self.model = fresh_model(cfg.seed, MODEL_WIDTHS[cfg.model]).to(
            self.device, memory_format=self.memory_format).train()
        self.teacher = load_teacher(cfg.teacher, self.device, self.memory_format) if cfg.teacher else None
        if cfg.slim_init == "teacher" and not cfg.resume:   # a resumed run has its own weights
            self.model.load_state_dict(warm_start(self.teacher, content, self.model.width).state_dict())
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, fused=cuda)
        self.total_steps = (math.ceil(cfg.epochs * self.data.steps_per_epoch)
                            if cfg.epochs is not None else cfg.steps)
        self.step_count = 0
        self.history: list[dict] = []
        use_compile = cfg.compile if cfg.compile is not None else cuda
        self._loss_fn = compiled_loss_terms() if use_compile else loss_terms
        self._weights = (cfg.content_weight, cfg.style_weight, cfg.tv_weight, cfg.stability_weight,
                         cfg.grid_weight, cfg.distill_weight)
        self._window = torch.zeros(len(TERMS), device=self.device)   # Σ weighted terms since last log
        self._window_steps = 0
        self._window_start = time.perf_counter()
        self._sample_photos: list[torch.Tensor] | None = None
        if cfg.resume:
            self.load_state(cfg.resume)

    # -- one step -----------------------------------------------------------------------------
    def perturbation(self, batch: int) -> Perturbation | None:
        """The stability term's random shift/zoom/rotation/noise for this step (None when it is off).
        Drawn from its own generator seeded by (seed, step), so a resumed run draws the same."""
        cfg = self.config
        if cfg.stability_weight <= 0:
            return None
        generator = torch.Generator(device=self.device).manual_seed(cfg.seed * 1_000_003 + self.step_count)
        return random_perturbation(batch, cfg.image_size, cfg.image_size, generator,
                                   cfg.stability_shift, cfg.stability_zoom, cfg.stability_noise,
                                   cfg.stability_rotate)

    def losses(self, content: torch.Tensor) -> LossTerms:
        x = content.float()
        if self.config.flat_augment > 0:   # own (seed, step) stream, apart from the stability term's
            seed = (self.config.seed + 1) * 2_000_029 + self.step_count
            x = flatten_patches(x, self.config.flat_augment, torch.Generator(device=self.device).manual_seed(seed))
        x = x.contiguous(memory_format=self.memory_format)
        perturbation = self.perturbation(len(x))
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None):
            return self._loss_fn(self.model, self.vgg, x, self.targets, self._weights[2] > 0, perturbation,
                                 with_grid=self._weights[4] > 0,
                                 teacher=self.teacher if self._weights[5] > 0 else None,
                                 style_reduction=self.config.style_reduction,
                                 style_layer_weights=self.config.style_layer_weights,
                                 jpeg_style=self.config.jpeg_style, jpeg_quality=self.config.jpeg_quality)

    def step(self) -> None:
        """One Adam step on the batch of the current step number. No host sync."""
        terms = self.losses(self.data.batch(self.step_count))
        weighted = torch.stack([w * t for w, t in zip(self._weights, terms)])
        self.optimizer.zero_grad(set_to_none=True)
        weighted.sum().backward()
        self.optimizer.step()
        self._window += weighted.detach()
        self._window_steps += 1
        self.step_count += 1

    def flush_log(self) -> dict | None:
        """Read back the losses of the steps since the last call (one sync), record a history row."""
        if not self._window_steps:
            return None
        terms = dict(zip(TERMS, (self._window / self._window_steps).tolist()))
        content, style, tv = terms["content"], terms["style"], terms["tv"]
        if not all(math.isfinite(v) for v in terms.values()):
            raise ValueError(f"training diverged: the loss became NaN or inf by step {self.step_count} "
                             "(try a lower --lr or --style-weight; checkpoints so far are kept)")
        now = time.perf_counter()
        row = {"step": self.step_count, **terms, "total": sum(terms.values()),
               "images_per_s": self._window_steps * self.config.batch_size / max(now - self._window_start, 1e-9)}
        self.history.append(row)
        self._window.zero_()
        self._window_steps, self._window_start = 0, now
        log.info("step %d/%d  content %.4g  style %.4g  tv %.3g  stability %.3g  grid %.3g  distill %.3g  "
                 "%.0f img/s", row["step"], self.total_steps, content, style, tv, terms["stability"], terms["grid"],
                 terms["distill"], row["images_per_s"])
        return row

    # -- state --------------------------------------------------------------------------------
    def state(self) -> dict:
        rng = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return to_cpu({"format": STATE_FORMAT, "step": self.step_count, "model": self.model.state_dict(),
                        "optimizer": self.optimizer.state_dict(), "rng": rng,
                        "config": self.config.settings(), "history": self.history})

    def save_state(self, path: str | Path | None = None) -> Path:
        path = Path(path) if path else self.config.run_dir / f"step_{self.step_count:07d}.pt"
        state = self.state()
        atomic_write(path, lambda tmp: torch.save(state, tmp), mode=0o644)
        if path.parent == self.config.run_dir:
            # By step number, and only up to ours: a later checkpoint (resumed from an earlier
            # one) is another branch of the run, not ours to delete.
            mine = [p for step, p in step_checkpoints(self.config.run_dir) if step <= self.step_count]
            for stale in mine[:-self.config.keep_checkpoints]:
                stale.unlink(missing_ok=True)
        return path

    def load_state(self, path: str | Path) -> None:
        try:
            state = load_torch_file(path, "a training checkpoint")
        except ValueError as exc:
            raise ValueError(f"--resume {exc}") from None
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"--resume {path}: not a styleforge training checkpoint (resume from "
                             "a step_*.pt file of the run's checkpoint folder)")
        # Not a warning like RESUME_KEYS: the other reduction is another loss, at another scale
        # (docs/training.md), so Adam's moments and the style weight would no longer fit it.
        # Checkpoints from before the option trained with "mean".
        # The same holds for the per-layer weights; checkpoints from before them weighed all 1.
        recorded = state.get("config")
        recorded = recorded if isinstance(recorded, dict) else {}
        saved = recorded.get("style_reduction", "mean")
        if saved != self.config.style_reduction:
            raise ValueError(f"--resume {path}: that run trained with style_reduction {saved!r}, this one asks "
                             f"for {self.config.style_reduction!r}; resume with {saved!r}, or start a new run "
                             "(another --checkpoint-dir, or --overwrite)")
        layers = tuple(float(w) for w in recorded.get("style_layer_weights", DEFAULT_LAYER_WEIGHTS))
        if layers != self.config.style_layer_weights:
            raise ValueError(f"--resume {path}: that run trained with style_layer_weights {layers}, this one asks "
                             f"for {self.config.style_layer_weights}; resume with those, or start a new run "
                             "(another --checkpoint-dir, or --overwrite)")
        try:
            self._restore(state, path)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"--resume {path}: damaged or from another version "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:160]})") from None

    def _restore(self, state: dict, path: str | Path) -> None:
        saved, now = state.get("config", {}), self.config.settings()
        changed = [k for k in RESUME_KEYS if saved.get(k, RESUME_DEFAULTS.get(k)) != now.get(k)]
        if changed:
            log.warning("resuming %s with changed settings (%s): the run will not match an "
                        "uninterrupted one", path, ", ".join(f"{k}: {saved.get(k)!r} → {now.get(k)!r}"
                                                             for k in changed))
        self.model.load_state_dict(state["model"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"]["torch"])
        if self.device.type == "cuda" and "cuda" in state["rng"]:
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
        self.step_count = int(state["step"])
        self.history = list(state.get("history", []))
        log.info("resumed from %s at step %d", path, self.step_count)

    # -- outputs ------------------------------------------------------------------------------
    def save_samples(self) -> Path:
        if self._sample_photos is None:
            paths = list(self.config.sample_photos) or samples.default_photos()
            self._sample_photos = samples.load_photos(paths)
        self.model.eval()
        outputs = samples.stylize_photos(self.model, self._sample_photos, self.amp_dtype)
        self.model.train()
        return samples.save_sheet(self._sample_photos, outputs,
                                  self.config.run_dir / "samples" / f"step_{self.step_count:07d}.png")

    def export(self, seconds: float, images_per_s: float) -> Path:
        cfg = self.config
        last = self.history[-1] if self.history else {}
        metadata = {"style": Path(cfg.out).stem, **cfg.metadata,
                    "training": cfg.settings(), "steps": str(self.step_count),
                    "final_losses": {k: last.get(k) for k in (*TERMS, "total")},
                    "train_seconds": f"{seconds:.1f}", "images_per_s": f"{images_per_s:.1f}",
                    "device": torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu",
                    "torch": torch.__version__}
        return save_checkpoint(cfg.out, self.model.state_dict(), metadata, dtype=torch.float16)

    # -- the loop -----------------------------------------------------------------------------
    def _eta(self, idle: float, first_step: int) -> str:
        """Remaining time from the mean step time after the first (warm-up) step; logs the whole
        run's estimate once, after ESTIMATE_AFTER steps."""
        done = self.step_count - first_step
        if done < 2:
            self._timed_from = time.perf_counter() - idle
            return "estimating"
        per_step = (time.perf_counter() - idle - self._timed_from) / (done - 1)
        left = per_step * (self.total_steps - self.step_count)
        if done == ESTIMATE_AFTER:
            log.info("%.2f s per step: %d steps take about %s (%s left); --steps, --epochs or "
                     "--max-seconds shorten the run", per_step, self.total_steps,
                     format_duration(per_step * self.total_steps), format_duration(left))
        return format_duration(left)

    def run(self) -> TrainResult:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
        )

        cfg = self.config
        first_step, stopped_early, idle = self.step_count, False, 0.0
        start = self._window_start = time.perf_counter()
        # rich's own remaining-time column needs many samples and shows -:--:-- for minutes on a
        # CPU, where one step takes seconds; the ETA here is (mean step time) × steps left.
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[stats]}"), TextColumn("ETA {task.fields[eta]}"))
        with Progress(*columns, disable=not cfg.progress, transient=False) as progress:
            task = progress.add_task(Path(cfg.out).stem or "train", total=self.total_steps,
                                     completed=self.step_count, stats="", eta="estimating")
            while self.step_count < self.total_steps:
                if cfg.max_seconds is not None and time.perf_counter() - start >= cfg.max_seconds:
                    stopped_early = True
                    log.info("time budget of %.0f s reached at step %d", cfg.max_seconds, self.step_count)
                    break
                self.step()
                step = self.step_count
                progress.update(task, advance=1, eta=self._eta(idle, first_step))
                if step % cfg.log_every == 0:
                    row = self.flush_log()
                    progress.update(task, stats=f"content {row['content']:.3g}  style {row['style']:.3g}  "
                                                f"{row['images_per_s']:.0f} img/s")
                pause = time.perf_counter()
                if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < self.total_steps:
                    self.save_state()
                if cfg.sample_every and step % cfg.sample_every == 0 and step < self.total_steps:
                    self.save_samples()
                paused = time.perf_counter() - pause      # side work is not training speed
                self._window_start += paused
                idle += paused
            self.flush_log()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        seconds = time.perf_counter() - start
        done = self.step_count - first_step
        images_per_s = done * cfg.batch_size / max(seconds - idle, 1e-9) if done else 0.0
        self.save_state()
        self.save_samples()
        out = self.export(seconds, images_per_s)
        last = self.history[-1] if self.history else {}
        return TrainResult(out, self.step_count, seconds, images_per_s,
                           {k: last[k] for k in (*TERMS, "total") if k in last},
                           stopped_early, list(self.history))


def train(config: TrainConfig, **shared) -> TrainResult:
    """The Python entry: check the paths, train, write `config.out`. `shared`: vgg=, content=."""
    config.check_paths()
    return Trainer(config, **shared).run()
