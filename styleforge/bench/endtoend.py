"""End-to-end benchmark: frames through the whole style network, per provider and size.

A provider maps float32 (N, 3, H, W) 0–255 on the device to the float32 network output, with
whatever conversions it needs inside the timed region (the runner contract of
`engine.backends`). Providers:
  eager-fp32   the seed project's baseline: the reference model, fp32, NCHW, PyTorch defaults
               (on CUDA that means cuDNN may use TF32; the row's `tf32` column says so)
  eager-bf16   the reference model in bf16, channels_last on CUDA
  compile      torch.compile(mode="reduce-overhead", dynamic=False) of the reference, bf16,
               channels_last (CUDA only)
  fused-bf16 / fused-fp16 / fused-fp32   the StyleForge fused backend (CUDA, kernels built)
The gate's reference is the same model in true fp32 (TF32 off), computed once per size.
Not here: timing and the gate rules (`harness`), files (`results`), the per-op suite (`ops`).
"""
from __future__ import annotations

import gc
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from ..engine.backends import fused_available, make_runner
from ..models.checkpoint import Checkpoint, CheckpointError, build_model
from ..models.transformer_net import TransformerNet, count_flops
from .harness import (
    FP32_REL_TOL,
    Outcome,
    Timer,
    check_image,
    gate_then_time,
    random_images,
    rel_l2,
    rotation_count,
    synchronize,
)
from .results import Row

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
PROVIDERS = {  # name → (backend, precision)
    "eager-fp32": ("eager-nchw", "fp32"),
    "eager-bf16": ("reference", "bf16"),
    "compile": ("compile", "bf16"),
    "fused-bf16": ("fused", "bf16"),
    "fused-fp16": ("fused", "fp16"),
    "fused-fp32": ("fused", "fp32"),
}
NAMED_SIZES = {"720p": (720, 1280), "1080p": (1080, 1920), "1440p": (1440, 2560),
               "4k": (2160, 3840), "2160p": (2160, 3840)}


@dataclass(frozen=True)
class Size:
    label: str
    height: int
    width: int


def parse_sizes(spec: str) -> list[Size]:
    """'256,512,1080p,4k,1280x720' → sizes; a number is a square, WxH is width × height."""
    sizes = []
    for part in (p.strip().lower() for p in spec.split(",")):
        if not part:
            continue
        if part in NAMED_SIZES:
            sizes.append(Size(part, *NAMED_SIZES[part]))
        elif part.isdigit():
            sizes.append(Size(part, int(part), int(part)))
        elif re.fullmatch(r"\d+x\d+", part):
            width, height = (int(v) for v in part.split("x"))
            sizes.append(Size(part, height, width))
        else:
            raise ValueError(f"--sizes: {part!r} is not a number, WxH, or one of {sorted(NAMED_SIZES)}")
    for s in sizes:
        if s.height % 4 or s.width % 4 or min(s.height, s.width) < 16:
            raise ValueError(f"--sizes: {s.label} must be ≥ 16 px with sides that are multiples of 4 "
                             "(the network's input contract; the pipeline pads other sizes)")
    if not sizes:
        raise ValueError("--sizes is empty")
    return sizes


def parse_providers(spec: str | None) -> list[str]:
    names = list(PROVIDERS) if not spec else [p.strip() for p in spec.split(",") if p.strip()]
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise ValueError(f"--providers: unknown {', '.join(unknown)} (known: {', '.join(PROVIDERS)})")
    return names


def random_style_checkpoint(seed: int = 0) -> Checkpoint:
    """Random weights scaled so the output spans 0–255 like a trained style's (not a flat grey)."""
    gen = torch.Generator().manual_seed(seed)
    model = TransformerNet()
    state = {}
    for name, value in model.state_dict().items():
        fresh = torch.empty_like(value)
        if value.dim() == 1 and name.rsplit(".", 1)[0].split(".")[-1].startswith("in"):
            fresh = (0.5 + torch.rand(value.shape, generator=gen)) if name.endswith("weight") \
                else torch.rand(value.shape, generator=gen) - 0.5
        elif value.dim() == 1:
            fresh = (torch.rand(value.shape, generator=gen) - 0.5) * 0.1
        else:
            fan_in = value[0].numel()
            fresh = torch.randn(value.shape, generator=gen) * (2.0 / fan_in) ** 0.5
        state[name] = fresh
    state["deconv3.conv2d.weight"] *= 20.0   # visible contrast around mid-grey
    state["deconv3.conv2d.bias"].fill_(127.0)
    return Checkpoint(state, {"style": "random-weights"})


def load_bench_style(style: str | None) -> tuple[Checkpoint, str]:
    """(weights, note): the named style, else the default built-in, else random weights."""
    from ..models.registry import default_style, load_style
    if style:
        return load_style(style), ""
    try:
        return load_style(default_style()), ""
    except CheckpointError:
        return random_style_checkpoint(), "no built-in style installed: random weights"


@contextmanager
def exact_fp32():
    """TF32 off for the reference: 'fp32' in the gate means fp32, whatever the defaults are."""
    with warnings.catch_warnings():  # newer PyTorch nudges towards `fp32_precision`; same effect
        warnings.simplefilter("ignore")
        saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def eager_nchw_runner(checkpoint: Checkpoint, device: torch.device):
    model = build_model(checkpoint).to(device).requires_grad_(False)

    @torch.inference_mode()
    def run(x: torch.Tensor) -> torch.Tensor:
        return model(x)

    return run


def build_runner(provider: str, checkpoint: Checkpoint, device: torch.device):
    backend, precision = PROVIDERS[provider]
    if backend == "eager-nchw":
        return eager_nchw_runner(checkpoint, device)
    return make_runner(build_model(checkpoint), device, DTYPES[precision], backend)


def unavailable_reason(provider: str, device: torch.device) -> str:
    backend, _ = PROVIDERS[provider]
    if backend in ("compile", "fused") and device.type != "cuda":
        return f"{provider} needs a CUDA device (running on {device.type})"
    if backend == "fused":
        ok, reason = fused_available(device)
        if not ok:
            return f"fused backend unavailable: {reason}"
    return ""


def release(device: torch.device, compiled: bool) -> None:
    """Drop the last provider's graphs and caches so the next one's peak memory is its own."""
    if compiled:
        torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_size(size: Size, checkpoint: Checkpoint, device: torch.device, providers: list[str],
             batch: int, timer: Timer, log=lambda msg: None) -> list[Row]:
    shape = f"{batch}x3x{size.height}x{size.width}"
    frame_bytes = batch * 3 * size.height * size.width * 4
    inputs = random_images(rotation_count(frame_bytes, device), batch, size.height, size.width,
                           device, seed=1000 + size.height)
    with exact_fp32():
        reference = eager_nchw_runner(checkpoint, device)(inputs[0])
    fp32_limit = FP32_REL_TOL
    if device.type == "cuda" and torch.backends.cudnn.allow_tf32:
        # PyTorch's own default fp32 (TF32 convs) sets the fp32 bar: 2× its error, as in conftest.
        fp32_limit = max(fp32_limit, 2 * rel_l2(eager_nchw_runner(checkpoint, device)(inputs[0]),
                                                reference))
    rows = []
    for provider in providers:
        row = Row("e2e", provider, op="stylize", size=size.label, shape=shape, batch=batch,
                  dtype=PROVIDERS[provider][1])
        reason = unavailable_reason(provider, device)
        if reason:
            row.status, row.error = "skipped", reason
        else:
            measure_provider(row, checkpoint, device, inputs, reference, fp32_limit, timer,
                             count_flops(size.height, size.width, batch))
        log(summary_line(size.label, row))
        rows.append(row)
    add_speedups(rows)
    return rows


def measure_provider(row: Row, checkpoint: Checkpoint, device: torch.device, inputs: list[torch.Tensor],
                     reference: torch.Tensor, fp32_limit: float, timer: Timer, flops: int) -> None:
    """Build, gate, time one provider into `row`; its peak memory is what it added on top."""
    backend, precision = PROVIDERS[row.provider]
    if precision == "fp32":
        row.notes["fp32_gate_rel_l2"] = fp32_limit
    synchronize(device)
    base = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    holder = {}

    def first_output() -> torch.Tensor:
        holder["run"] = build_runner(row.provider, checkpoint, device)
        return holder["run"](inputs[0])

    outcome = gate_then_time(first_output,
                             lambda out: check_image(out.float(), reference, DTYPES[precision], fp32_limit),
                             lambda: timer.time(holder["run"], inputs))
    fill_outcome(row, outcome, int(row.batch), flops)
    if device.type == "cuda":
        synchronize(device)
        row.peak_mb = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    holder.clear()
    release(device, compiled=backend == "compile")


def fill_outcome(row: Row, outcome: Outcome, batch: int, flops: int) -> None:
    row.status, row.error = outcome.status, outcome.error
    row.notes["setup_s"] = round(outcome.setup_s, 2)
    if outcome.gate is not None:
        row.psnr_db, row.rel_err = outcome.gate.psnr_db, outcome.gate.rel_err
    if outcome.stats is None:
        return
    s = outcome.stats
    row.median_ms, row.p20_ms, row.p80_ms, row.reps, row.timer = (
        s.median_ms, s.p20_ms, s.p80_ms, s.reps, s.timer)
    row.fps = batch / (s.median_ms / 1e3)
    row.tflops = flops / (s.median_ms / 1e3) / 1e12


def add_speedups(rows: list[Row]) -> None:
    """Speed-up = baseline median / provider median, against rows measured at the same size."""
    medians = {r.provider: r.median_ms for r in rows if r.status == "ok"}
    for r in rows:
        if r.status != "ok":
            continue
        if "eager-fp32" in medians:
            r.speedup_vs_eager_fp32 = medians["eager-fp32"] / r.median_ms
        if "compile" in medians:
            r.speedup_vs_compile = medians["compile"] / r.median_ms


def summary_line(label: str, row: Row) -> str:
    if row.status == "ok":
        return (f"{label} {row.provider}: [green]ok[/] {row.median_ms:.3f} ms/batch, "
                f"setup {row.notes.get('setup_s', 0):.1f} s")
    color = "yellow" if row.status == "skipped" else "red"
    return f"{label} {row.provider}: [{color}]{row.status}[/] {row.error}"
