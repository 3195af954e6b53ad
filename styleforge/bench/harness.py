"""Timing and the correctness gate: the two things every StyleForge benchmark goes through.

`Timer` measures one call many times and summarises the samples as median / p20 / p80 (ms).
On CUDA each repetition sits between its own pair of CUDA events, so host gaps between reps are
not counted but a launch-bound provider's idle GPU time inside a rep is; on CPU the same loop
uses `time.perf_counter`. Small inputs rotate among several buffers (or, for ops whose inputs
the harness does not own, L2 is flushed between reps outside the timed region) so a number is
never the speed of the cache. Inputs are random images, never zeros.

`time_then_gate` warms a provider up and times it, then calls the same callable once more and
checks that output against the reference: what is gated is what was timed (a fused engine's
captured graph of the plan it chose, a compiled model's CUDA graph), never only a first call
that may take another path. A provider that fails (wrong output or an exception) is reported
without a time.
This is not a profiler (see `bench.profile`) and it does not decide what is run (`endtoend`, `ops`).
We chose our own event loop over `triton.testing.do_bench` because do_bench picks its number of
reps from a time budget, which gives a single rep for a 4K frame; here `--reps` is the rep count.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import torch

from ..psnr import psnr

FP32_REL_TOL = 1e-5          # same floor as tests/conftest.py: fp32 must be near-exact
LOW_PRECISION_MIN_PSNR = 40.0  # dB vs the fp32 reference, on the clamped 0–255 image
CPU_CACHE_BYTES = 32 << 20   # stands in for L2 on CPU: a typical last-level cache


@dataclass(frozen=True)
class Stats:
    median_ms: float
    p20_ms: float
    p80_ms: float
    reps: int
    timer: str


def quantile(sorted_samples: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default `linear` method)."""
    if not sorted_samples:
        raise ValueError("no samples")
    pos = q * (len(sorted_samples) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def summarize(samples_ms: list[float], timer: str = "") -> Stats:
    ordered = sorted(samples_ms)
    return Stats(quantile(ordered, 0.5), quantile(ordered, 0.2), quantile(ordered, 0.8),
                 len(ordered), timer)


def random_images(count: int, batch: int, height: int, width: int, device: torch.device,
                  seed: int = 0) -> list[torch.Tensor]:
    """`count` float32 (batch, 3, H, W) tensors in 0–255: smooth blobs plus uniform noise.

    The smooth part gives the network image-like statistics (large uniform regions, edges);
    the noise makes every pixel different so no kernel can shortcut on repeated values.
    """
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        coarse = torch.rand(batch, 3, max(2, height // 64), max(2, width // 64), generator=gen)
        smooth = torch.nn.functional.interpolate(coarse, size=(height, width), mode="bilinear",
                                                 align_corners=False)
        noise = torch.rand(batch, 3, height, width, generator=gen)
        out.append(((0.75 * smooth + 0.25 * noise) * 255.0).to(device))
    return out


def cache_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20))
    return CPU_CACHE_BYTES


def rotation_count(bytes_per_input: int, device: torch.device, limit: int = 64) -> int:
    """How many input buffers to cycle so that together they overflow the cache twice."""
    return max(1, min(limit, math.ceil(2 * cache_bytes(device) / max(1, bytes_per_input))))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Timer:
    device: torch.device
    reps: int = 30
    warmup: int = 3
    min_warmup_s: float = 0.1   # keep warming until clocks and allocator have settled
    flush_l2: bool = False      # for callables whose inputs we cannot rotate

    def __post_init__(self):
        self._flush_buffer = None
        if self.flush_l2 and self.device.type == "cuda":
            self._flush_buffer = torch.empty(2 * cache_bytes(self.device), dtype=torch.int8,
                                             device=self.device)

    @property
    def name(self) -> str:
        if self.device.type == "cuda":
            return "cuda-events+l2flush" if self._flush_buffer is not None else "cuda-events"
        return "perf_counter"

    @torch.inference_mode()
    def time(self, fn: Callable[..., object], inputs: list[torch.Tensor] | None = None) -> Stats:
        """Time `fn(inputs[i % len])` (or `fn()` when inputs is None) `reps` times."""
        args = [(x,) for x in inputs] if inputs else [()]
        start = time.perf_counter()
        done = 0
        while done < self.warmup or time.perf_counter() - start < self.min_warmup_s:
            fn(*args[done % len(args)])
            synchronize(self.device)
            done += 1
        if self.device.type == "cuda":
            samples = self._time_cuda(fn, args)
        else:
            samples = []
            for i in range(self.reps):
                t0 = time.perf_counter()
                fn(*args[i % len(args)])
                samples.append((time.perf_counter() - t0) * 1e3)
        return summarize(samples, self.name)

    def _time_cuda(self, fn, args) -> list[float]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        for i in range(self.reps):
            if self._flush_buffer is not None:
                self._flush_buffer.zero_()
            starts[i].record()
            fn(*args[i % len(args)])
            ends[i].record()
        torch.cuda.synchronize(self.device)
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]


@dataclass(frozen=True)
class Gate:
    ok: bool
    message: str = ""
    psnr_db: float | None = None
    rel_err: float | None = None


def rel_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    out64, ref64 = out.detach().double(), ref.detach().to(out.device).double()
    return float((out64 - ref64).norm() / ref64.norm().clamp_min(1e-300))


def check_image(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype,
                fp32_limit: float = FP32_REL_TOL) -> Gate:
    """End-to-end rule: fp32 near-exact (rel L2 of the raw output), else PSNR ≥ 40 dB.

    PSNR is taken on the clamped 0–255 images, which is what a user sees.
    """
    if tuple(out.shape) != tuple(ref.shape):
        return Gate(False, f"output shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    if not torch.isfinite(out).all():
        return Gate(False, "output has NaN or Inf")
    err = rel_l2(out, ref)
    db = psnr(out.clamp(0, 255), ref.clamp(0, 255))
    if dtype == torch.float32:
        ok, rule = err <= fp32_limit, f"rel L2 {err:.3g} > {fp32_limit:.3g} (fp32)"
    else:
        ok, rule = db >= LOW_PRECISION_MIN_PSNR, f"PSNR {db:.1f} dB < {LOW_PRECISION_MIN_PSNR:g} dB"
    return Gate(ok, "" if ok else rule, db, err)


def check_tensor(out: torch.Tensor, ref: torch.Tensor, rel_tol: float) -> Gate:
    """Op rule: relative L2 error vs the reference ≤ the case's `rel_tol`."""
    if tuple(out.shape) != tuple(ref.shape):
        return Gate(False, f"output shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    if not torch.isfinite(out).all():
        return Gate(False, "output has NaN or Inf")
    err = rel_l2(out, ref)
    return Gate(err <= rel_tol, "" if err <= rel_tol else f"rel L2 {err:.3g} > {rel_tol:.3g}",
                rel_err=err)


@dataclass
class Outcome:
    status: str                 # "ok", "failed" or "skipped"
    error: str = ""
    stats: Stats | None = None
    gate: Gate | None = None
    setup_s: float = 0.0        # building + the first call: compile time lives here


def describe_error(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def time_then_gate(run: Callable[[], torch.Tensor], check: Callable[[torch.Tensor], Gate],
                   time_it: Callable[[], Stats], setup: Callable[[], None] = lambda: None) -> Outcome:
    """Set up, call once, time, then gate the output of one more call of the same warmed callable.

    `run` is exactly what `time_it` times (on the first input): the gate sees what the timed calls
    computed after every warm-up, capture and autotuning step, not a first call that may take
    another path. A failed gate or an exception at any stage fails the outcome, and a failed
    outcome carries no timing.
    """
    t0 = time.perf_counter()
    stage = "setup"
    try:
        setup()
        with torch.inference_mode():
            run()                     # compile, first-call paths: their cost is setup_s
        setup_s = time.perf_counter() - t0
        stage = "timing"
        stats = time_it()
        stage = "gate"
        with torch.inference_mode():
            out = run()
            gate = check(out)
        del out
    except Exception as exc:  # a provider may fail in any way (compile, OOM, kernel error)
        prefix = "" if stage == "setup" else f"while {stage}: "
        return Outcome("failed", prefix + describe_error(exc), setup_s=time.perf_counter() - t0)
    if not gate.ok:
        return Outcome("failed", f"timed output: {gate.message}", gate=gate, setup_s=setup_s)
    return Outcome("ok", stats=stats, gate=gate, setup_s=setup_s)
