"""End-to-end benchmark: frames through the whole style network, per provider and size.

The providers and how each is set up are in `providers` (eager fp32/bf16/fp16, torch.compile in
three modes × bf16/fp16, the fused engine). The contract is the same for all of them: every
provider gets its input already in the dtype and memory format it reads best, prepared once per
input before timing, and returns its output in its own dtype and layout; the gate converts that
output to float32 after timing. (The fused engine reads the float32 NCHW frame and writes float32,
so its cast, pad and output are inside its timed calls.) cuDNN's autotuner is on for every
provider. Each provider is warmed up, timed, and then its timed callable is called once more on
the first input and that output is gated against the fp32 reference (`harness.time_then_gate`);
a failed gate fails the row and drops its time. Speed-ups are precision-matched: each fused
precision against the best compile mode and the eager model of the same precision (fp32 only
where neither side used TF32). The reference is the same model in true fp32 (TF32 off), once per size.
Not here: timing and the gate rules (`harness`), files (`results`), the per-op suite (`ops`).
"""
from __future__ import annotations

import gc
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from ..models.checkpoint import Checkpoint, CheckpointError, build_model
from ..models.transformer_net import TransformerNet, count_flops
from .harness import (
    FP32_REL_TOL,
    Outcome,
    Timer,
    check_image,
    random_images,
    rel_l2,
    rotation_count,
    synchronize,
    time_then_gate,
)
from .progress import Deadline
from .providers import PROVIDERS, autotuned_cudnn, build_provider, select, unavailable_reason
from .results import Row

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


def parse_providers(spec: str | None, compile_modes: str | None = None) -> list[str]:
    return select(spec, compile_modes)


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


def reference_output(checkpoint: Checkpoint, x: torch.Tensor) -> torch.Tensor:
    """The seed's model in fp32, NCHW, on x's device: the gate's reference under `exact_fp32`."""
    model = build_model(checkpoint).to(x.device).requires_grad_(False)
    with torch.inference_mode():
        return model(x)


def release(device: torch.device, compiled: bool) -> None:
    """Drop the last provider's graphs and caches so the next one's peak memory is its own."""
    if compiled:
        torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_size(size: Size, checkpoint: Checkpoint, device: torch.device, providers: list[str],
             batch: int, timer: Timer, log=lambda msg: None, deadline: Deadline | None = None) -> list[Row]:
    shape = f"{batch}x3x{size.height}x{size.width}"
    frame_bytes = batch * 3 * size.height * size.width * 4
    inputs = random_images(rotation_count(frame_bytes, device), batch, size.height, size.width,
                           device, seed=1000 + size.height)
    gate: dict = {}

    def reference() -> tuple[torch.Tensor, float]:
        """(fp32 reference, fp32 rel-L2 limit), computed once, when a provider first needs it."""
        if not gate:
            with exact_fp32():
                gate["ref"] = reference_output(checkpoint, inputs[0])
            gate["limit"] = FP32_REL_TOL
            if device.type == "cuda" and torch.backends.cudnn.allow_tf32:
                # PyTorch's own default fp32 (TF32 convs) sets the fp32 bar: 2× its error, as in conftest.
                gate["limit"] = max(FP32_REL_TOL, 2 * rel_l2(reference_output(checkpoint, inputs[0]), gate["ref"]))
        return gate["ref"], gate["limit"]

    rows = []
    for name in providers:
        provider = PROVIDERS[name]
        row = Row("e2e", name, op="stylize", size=size.label, shape=shape, batch=batch,
                  dtype=provider.precision)
        reason = unavailable_reason(provider, device)
        if not reason and deadline is not None and deadline.passed():
            reason = "not started: the run's --time-budget was spent"
        if reason:
            row.status, row.error = "skipped", reason
        else:
            with autotuned_cudnn():
                measure_provider(row, checkpoint, device, inputs, *reference(), timer,
                                 count_flops(size.height, size.width, batch))
        log(summary_line(size.label, row))
        rows.append(row)
    add_speedups(rows)
    return rows


def measure_provider(row: Row, checkpoint: Checkpoint, device: torch.device, inputs: list[torch.Tensor],
                     reference: torch.Tensor, fp32_limit: float, timer: Timer, flops: int) -> None:
    """Build, time and gate one provider into `row`; its peak memory is what it added on top."""
    provider = PROVIDERS[row.provider]
    row.notes["cudnn_benchmark"] = torch.backends.cudnn.benchmark
    if provider.mode:
        row.notes["compile_mode"] = provider.mode
    if provider.precision == "fp32":
        row.notes["fp32_gate_rel_l2"] = fp32_limit
        row.notes["tf32_conv"] = provider.backend != "fused" and device.type == "cuda" \
            and torch.backends.cudnn.allow_tf32
    synchronize(device)
    base = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    held: dict = {}

    def setup() -> None:
        held["built"] = built = build_provider(provider, checkpoint, device)
        held["inputs"] = [built.prepare(x) for x in inputs]      # outside every timed call

    def run_first() -> torch.Tensor:
        return held["built"].run(held["inputs"][0])

    def check(out: torch.Tensor) -> object:
        return check_image(out.float(), reference, provider.dtype, fp32_limit)

    outcome = time_then_gate(run_first, check, lambda: timer.time(held["built"].run, held["inputs"]), setup)
    fill_outcome(row, outcome, int(row.batch), flops)
    if "built" in held:
        row.notes.update(held["built"].describe())
    if device.type == "cuda":
        synchronize(device)
        row.peak_mb = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    held.clear()
    release(device, compiled=provider.backend == "compile")


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


def best_compile(rows: list[Row], precision: str) -> Row | None:
    """The fastest ok torch.compile row of `precision` among `rows` (one size), if any."""
    ok = [r for r in rows if r.status == "ok" and PROVIDERS.get(r.provider) is not None
          and PROVIDERS[r.provider].backend == "compile" and r.dtype == precision]
    return min(ok, key=lambda r: r.median_ms, default=None)


def add_speedups(rows: list[Row]) -> None:
    """Precision-matched speed-ups at one size: baseline median / this median, where the baseline
    is the best compile row of this row's precision (`speedup_vs_compile`, naming it in notes) and
    the eager row of this precision (`speedup_vs_eager`). fp32 gets no eager ratio where the eager
    row used TF32 and this one did not: that would compare two precisions."""
    for precision in ("bf16", "fp16", "fp32"):
        best = best_compile(rows, precision)
        if best is not None:
            best.notes["best_compile"] = True
        eager = min((r for r in rows if r.provider in (f"eager-{precision}", f"eager-nchw-{precision}")
                     and r.status == "ok"), key=lambda r: r.median_ms, default=None)
        for r in rows:
            if r.status != "ok" or r.dtype != precision:
                continue
            if best is not None:
                r.speedup_vs_compile = best.median_ms / r.median_ms
                r.notes["vs_compile"] = best.provider
            if eager is not None and eager.notes.get("tf32_conv", False) == r.notes.get("tf32_conv", False):
                r.speedup_vs_eager = eager.median_ms / r.median_ms


def summary_line(label: str, row: Row) -> str:
    if row.status == "ok":
        return (f"{label} {row.provider}: [green]ok[/] {row.median_ms:.3f} ms/batch, "
                f"setup {row.notes.get('setup_s', 0):.1f} s")
    color = "yellow" if row.status == "skipped" else "red"
    return f"{label} {row.provider}: [{color}]{row.status}[/] {row.error}"
