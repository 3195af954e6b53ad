"""The training loop of the arbitrary-style model: one GPU, several (DDP via torchrun), or the CPU.

Each step draws B photos and B paintings (`arbitrary_data.py`, a pure function of the step and
rank), encodes both with the frozen encoder, and runs ONE model call on 3B pairs — (photo,
painting), (photo, photo), (painting, painting) — so the identity terms share the pass and DDP
sees one forward per backward. Losses: `arbitrary_losses.py`. On CUDA: bf16 autocast, fused
Adam, optional `torch.compile` of the model call. Under torchrun (detected with
`torch.distributed.is_torchelastic_launched`), the process group starts from the environment
torchrun sets, each rank draws its own batches, and only rank 0 logs and writes. Checkpoints
(`step_NNNNNNN.pt`: trainable weights, optimizer, RNG states, step, settings, history) are
written atomically; `resume="auto"` continues from the newest. The learning rate is a function
of the step, so no scheduler state exists. The final weights: `weights.save_arbitrary` (fp16,
encoder included, so the file is all inference needs).
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from ..io.atomic import atomic_write
from ..models.arbitrary import ArbitraryStyleNet, save_arbitrary
from ..models.arbitrary.encoder import build_encoder, encoder_state_from_file
from ..models.vgg import VGGWeightsError
from . import arbitrary_losses as L
from .arbitrary_config import ArbitraryTrainConfig
from .arbitrary_data import ArbitraryBatches, load_paintings, load_photos
from .arbitrary_samples import save_sample_sheet
from .trainer import to_cpu

log = logging.getLogger(__name__)
STATE_FORMAT = "styleforge-arbitrary-train/1"
TERMS = L.ArbitraryLossTerms._fields


@dataclass
class ArbitraryTrainResult:
    out: Path | None
    steps: int
    seconds: float
    losses: dict[str, float]
    stopped_early: bool = False
    history: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class World:
    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_world(device: str) -> World:
    """Join torchrun's process group when launched by it (NCCL on CUDA, gloo on the CPU)."""
    if not dist.is_torchelastic_launched():
        return World()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device != "cpu" and torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    local = dist.get_node_local_rank(fallback_rank=rank)
    return World(rank, local, dist.get_world_size())


def _device(cfg: ArbitraryTrainConfig, world: World) -> torch.device:
    if cfg.device == "cpu" or (cfg.device == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but PyTorch sees no CUDA device")
    torch.cuda.set_device(world.local_rank)
    return torch.device("cuda", world.local_rank)


class ArbitraryTrainer:
    """`photos`, `paintings`/`groups` and `encoder_state` may be passed in (tests, notebooks)."""

    def __init__(self, cfg: ArbitraryTrainConfig, *, photos: torch.Tensor | None = None,
                 paintings: list[torch.Tensor] | None = None, groups: list[str] | None = None,
                 encoder_state: dict[str, torch.Tensor] | None = None, world: World | None = None):
        self.cfg = cfg
        self.world = world or init_world(cfg.device)
        self.device = _device(cfg, self.world)
        cuda = self.device.type == "cuda"
        self.amp_dtype = torch.bfloat16 if cfg.precision == "bf16" or (cfg.precision == "auto" and cuda) else None
        if cuda:
            torch.backends.cudnn.benchmark = True
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        torch.manual_seed(cfg.seed)
        if encoder_state is None:
            if cfg.vgg_weights is None:
                raise VGGWeightsError("train-arbitrary needs --vgg-weights: a torchvision-key VGG16 state "
                                      "dict up to conv5_1 (the shared data's vgg16_relu5_1.fp16.pth)")
            encoder_state = encoder_state_from_file(cfg.vgg_weights)
        encoder = build_encoder(encoder_state)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.model = ArbitraryStyleNet(cfg.model, encoder).to(self.device).train()
        self.encoder = self.model.encoder
        self.net = self.model
        if self.world.size > 1:
            self.net = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.world.local_rank] if cuda else None)
        if cfg.compile:
            from ..kernels import register_ops
            register_ops()   # before tracing: the graph then holds the ops, not their registration
        self.forward = torch.compile(self.net) if cfg.compile else self.net
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(params, lr=cfg.lr, fused=cuda)

        if photos is None:
            photos = load_photos(cfg.content_dir, cfg.content_size, cfg.max_content)
        if paintings is None:
            paintings, groups = load_paintings(list(cfg.style_dirs), cfg.style_size, cfg.exclude)
        self.data = ArbitraryBatches(photos, paintings, groups or ["all"] * len(paintings), cfg.batch_size,
                                     cfg.image_size, cfg.seed, self.world.rank, cfg.group_power, self.device,
                                     cfg.hue_jitter)
        self.sample_paintings = self._pick_sample_paintings(paintings, groups)
        self.weights = torch.tensor([cfg.content_weight, cfg.style_weight, cfg.gram_weight, cfg.local_weight,
                                     cfg.identity_pixel_weight, cfg.identity_feature_weight,
                                     cfg.colour_weight, cfg.grid_weight])
        self.with_identity = cfg.identity_pixel_weight > 0 or cfg.identity_feature_weight > 0
        self.step_count = 0
        self.history: list[dict] = []
        self._window = torch.zeros(len(TERMS), device=self.device)
        self._window_steps = 0
        self._window_start = time.perf_counter()
        path = None
        if cfg.resume:
            path = self.latest_checkpoint() if cfg.resume == "auto" else Path(cfg.resume)
            if path is not None:
                self.load_state(path)
        if path is None and cfg.init_weights:
            self.load_weights(cfg.init_weights)

    @staticmethod
    def _pick_sample_paintings(paintings, groups, count: int = 4) -> list[torch.Tensor]:
        """One painting from each of the first `count` groups (a fixed, varied sheet)."""
        seen, picked = set(), []
        for image, group in zip(paintings, groups or ["all"] * len(paintings)):
            if group not in seen:
                seen.add(group)
                picked.append(image)
        return (picked + list(paintings))[:count]

    # -- one step ---------------------------------------------------------------------------
    def lr_at(self, step: int) -> float:
        cfg = self.cfg
        if step < cfg.warmup:
            return cfg.lr * (step + 1) / cfg.warmup
        t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0))))

    def loss_terms(self, step: int) -> torch.Tensor:
        """The unweighted terms (`TERMS`) of `step`'s batch, stacked (fp32, on the device)."""
        photos, paintings = self.data.batch(step)
        b = len(photos)
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None):
            with torch.no_grad():
                fc, fs = self.encoder(photos), self.encoder(paintings)
            if self.with_identity:
                c_in = {k: torch.cat([fc[k], fc[k], fs[k]]) for k in fc}
                s_in = {k: torch.cat([fs[k], fc[k], fs[k]]) for k in fs}
            else:
                c_in, s_in = fc, fs
            out = self.forward(c_in, s_in)
            fo = self.encoder(out)
        part = lambda feats, i: {k: v[i * b:(i + 1) * b] for k, v in feats.items()}  # noqa: E731
        f_cs = part(fo, 0)
        targets = L.local_targets(fc, fs, max_style_tokens=self.cfg.model.max_style_tokens)
        zero = torch.zeros((), device=self.device)
        with torch.autocast(self.device.type, enabled=False):
            terms = [L.content_loss(f_cs, fc), L.style_loss(f_cs, fs), L.gram_loss(f_cs, fs),
                     L.local_loss(f_cs, targets)]
        if self.with_identity:
            terms += [L.identity_pixel_loss(out[b:2 * b], photos) + L.identity_pixel_loss(out[2 * b:], paintings),
                      L.identity_feature_loss(part(fo, 1), fc) + L.identity_feature_loss(part(fo, 2), fs)]
        else:
            terms += [zero, zero]
        with torch.autocast(self.device.type, enabled=False):
            stylized = out[:b].float()
            terms += [L.colour_loss(stylized, paintings) if self.cfg.colour_weight else zero,
                      L.grid_loss(stylized) if self.cfg.grid_weight else zero]
        return torch.stack([t if torch.is_tensor(t) else zero + t for t in terms])

    def step(self) -> torch.Tensor:
        """One Adam step; returns the weighted terms (on the device, no host sync)."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr_at(self.step_count)
        weighted = self.loss_terms(self.step_count) * self.weights.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        weighted.sum().backward()
        self.optimizer.step()
        self._window += weighted.detach()
        self._window_steps += 1
        self.step_count += 1
        return weighted.detach()

    def flush_log(self) -> dict | None:
        if not self._window_steps:
            return None
        window = self._window / self._window_steps
        if self.world.size > 1:
            dist.all_reduce(window)
            window /= self.world.size
        values = window.tolist()
        now = time.perf_counter()
        row = {"step": self.step_count, **dict(zip(TERMS, values)), "total": sum(values),
               "lr": self.lr_at(self.step_count - 1),
               "pairs_per_s": self._window_steps * self.cfg.batch_size * self.world.size
               / max(now - self._window_start, 1e-9)}
        self.history.append(row)
        self._window.zero_()
        self._window_steps, self._window_start = 0, now
        if self.world.main:
            log.info("step %d/%d  " + "  ".join(f"{t} %.4g" for t in TERMS) + "  %.0f pairs/s",
                     row["step"], self.cfg.steps, *values, row["pairs_per_s"])
        return row

    # -- state ------------------------------------------------------------------------------
    def state(self) -> dict:
        rng = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return to_cpu({"format": STATE_FORMAT, "step": self.step_count,
                        "model": self.model.trainable_state_dict(), "optimizer": self.optimizer.state_dict(),
                        "rng": rng, "config": self.cfg.settings(), "history": self.history,
                        "world_size": self.world.size})

    def save_state(self) -> Path | None:
        if not self.world.main:
            return None
        run = self.cfg.run_path
        run.mkdir(parents=True, exist_ok=True)
        path = run / f"step_{self.step_count:07d}.pt"
        state = self.state()
        atomic_write(path, lambda tmp: torch.save(state, tmp), mode=0o644)
        for stale in sorted(run.glob("step_*.pt"))[:-max(1, self.cfg.keep_checkpoints)]:
            stale.unlink(missing_ok=True)
        return path

    def load_weights(self, path: str | Path) -> None:
        """Trainable weights from a weights file (`load_arbitrary`; int8 files are dequantised):
        a fine-tune from shipped weights starts at step 0 with Adam afresh."""
        from ..models.arbitrary import load_arbitrary
        source, _ = load_arbitrary(path, self.cfg.vgg_weights)
        if source.config != self.model.config:
            raise ValueError(f"{path}: model settings {source.config} differ from this run's {self.model.config}")
        self.model.load_state_dict(source.trainable_state_dict(), strict=False)
        if self.world.main:
            log.info("starting from the weights of %s", path)

    def latest_checkpoint(self) -> Path | None:
        found = sorted(self.cfg.run_path.glob("step_*.pt"))
        return found[-1] if found else None

    def load_state(self, path: str | Path) -> None:
        from ..models.checkpoint import load_torch_file
        state = load_torch_file(path, "a training checkpoint")   # ValueError: one line
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"{path}: not a styleforge arbitrary-style training checkpoint")
        missing, unexpected = self.model.load_state_dict(state["model"], strict=False)
        if unexpected or [k for k in missing if not k.startswith("encoder.")]:
            raise ValueError(f"{path}: weights do not fit this model (settings changed?)")
        if state.get("optimizer"):
            self.optimizer.load_state_dict(state["optimizer"])
        elif self.world.main:
            log.info("%s holds no optimizer state: Adam starts afresh", path)
        torch.set_rng_state(state["rng"]["torch"])
        if self.device.type == "cuda" and "cuda" in state["rng"]:
            torch.cuda.set_rng_state(state["rng"]["cuda"], self.device)
        self.step_count = int(state["step"])
        self.history = list(state.get("history", []))
        if self.world.main:
            log.info("resumed from %s at step %d", path, self.step_count)

    # -- outputs ----------------------------------------------------------------------------
    def save_samples(self) -> Path | None:
        if not self.world.main:
            return None
        path = self.cfg.run_path / "samples" / f"step_{self.step_count:07d}.png"
        self.model.eval()
        try:
            return save_sample_sheet(self.model, self.sample_paintings, path, self.amp_dtype)
        finally:
            self.model.train()

    def export(self, seconds: float) -> Path | None:
        if not self.world.main:
            return None
        last = self.history[-1] if self.history else {}
        meta = {"training": self.cfg.settings(), "steps": str(self.step_count),
                "final_losses": {k: last.get(k) for k in (*TERMS, "total")},
                "train_seconds": f"{seconds:.1f}", "world_size": str(self.world.size),
                "device": torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu",
                "torch": torch.__version__}
        return save_arbitrary(self.cfg.out_path, self.model, meta)

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> ArbitraryTrainResult:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        cfg = self.cfg
        start = self._window_start = time.perf_counter()
        stopped = False
        columns = (TextColumn("[bold]arbitrary"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn())
        with Progress(*columns, disable=not (cfg.progress and self.world.main)) as progress:
            task = progress.add_task("train", total=cfg.steps, completed=self.step_count, stats="")
            while self.step_count < cfg.steps:
                if cfg.max_seconds is not None and time.perf_counter() - start >= cfg.max_seconds:
                    stopped = True
                    break
                self.step()
                progress.advance(task)
                step = self.step_count
                if step % cfg.log_every == 0:
                    row = self.flush_log()
                    progress.update(task, stats=f"total {row['total']:.3g}  {row['pairs_per_s']:.0f} pairs/s")
                pause = time.perf_counter()
                if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < cfg.steps:
                    self.save_state()
                if cfg.sample_every and step % cfg.sample_every == 0 and step < cfg.steps:
                    self.save_samples()
                self._window_start += time.perf_counter() - pause
            self.flush_log()
        seconds = time.perf_counter() - start
        self.save_state()
        self.save_samples()
        out = self.export(seconds)
        last = self.history[-1] if self.history else {}
        return ArbitraryTrainResult(out, self.step_count, seconds,
                                    {k: last[k] for k in (*TERMS, "total") if k in last}, stopped, list(self.history))


def train_arbitrary(cfg: ArbitraryTrainConfig, **shared) -> ArbitraryTrainResult:
    """The Python entry of `styleforge train-arbitrary`: check the paths, train, export."""
    if "photos" not in shared:
        cfg.check_paths()
    trainer = ArbitraryTrainer(cfg, **shared)
    try:
        return trainer.run()
    finally:
        if trainer.world.size > 1 and dist.is_initialized():
            dist.destroy_process_group()
