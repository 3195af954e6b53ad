"""The fused engine's per-shape choices: our 9×9 op or cuDNN per layer, and which plan per shape.

`LayerChoice` is what `FusedRunner.layer_choices` holds for a (layer, input shape): which
implementation runs there (our op, a fused plan, or cuDNN) and why. `choose_layer` times our op
and cuDNN on the real input; `choose_plan` times the captured graphs of the candidate plans and
keeps the fastest. Every choice is made the same way: outside capture, after the candidates'
outputs agree within CHOICE_REL_TOL, by the median of a few calls timed with CUDA events
(`median_ms`). Not a benchmark (that is `styleforge.bench`): a few repetitions, enough to rank two
paths that differ by more than their noise. It builds and captures nothing itself.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import torch

from .. import kernels
from ..switches import Switches

CHOICE_REPS = 5        # timed calls per candidate
CHOICE_REL_TOL = 5e-2  # a candidate must agree with cuDNN's result this well before it may be chosen
# Tried against the cuDNN plan's graph where the fused plan is the default and the choice automatic.
CANDIDATE_PLANS = ("conv3x3", "conv3x3_links", "hybrid")

log = logging.getLogger(__name__)


@dataclass
class LayerChoice:
    provider: str                   # "styleforge" (the conv9x9 op), "conv3x3" (the fused residual
                                    # and decoder chain), "conv3x3_links" (the same, the residual
                                    # blocks as separate calls), "hybrid" (fused decoder only) or "cudnn"
    reason: str                     # "faster", "slower", or why the op was not tried
    op_ms: float | None = None      # median of CHOICE_REPS calls (a whole frame for "residual")
    cudnn_ms: float | None = None
    plans: dict[str, float] | None = None   # "residual": each plan's frame time (ms) where timed


def median_ms(fn, reps: int = CHOICE_REPS, warmup: int = 1) -> float:
    """Median of `reps` calls of fn on the current stream after `warmup` untimed ones, by CUDA events
    (synchronises)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """‖got − want‖ / ‖want‖ in float64: how well a candidate agrees with cuDNN's result."""
    want = want.double()
    return float((got.double() - want).norm() / want.norm().clamp_min(1e-30))


def op_unavailable(x: torch.Tensor, op_args: tuple, dtype: torch.dtype, switches: Switches) -> str:
    """Why the conv9x9 op cannot run on op_args ("" if it can)."""
    if x.device.type != "cuda" or dtype not in (torch.float16, torch.bfloat16):
        return "needs a CUDA device and fp16/bf16"
    if kernels.current_mode() == "reference":
        return "kernels in reference mode"
    if switches.conv9x9 == "off":
        return "STYLEFORGE_CONV9X9=off"
    if not kernels.conv9x9_supported(*op_args):
        return "shape or dtype not supported by the op"
    ok, why = kernels.cuda_kernels_available()
    return "" if ok else why


def choose_layer(name: str, x: torch.Tensor, op_args: tuple, op: Callable, cudnn: Callable,
                 dtype: torch.dtype, switches: Switches) -> LayerChoice:
    """Our 9×9 op or cuDNN for layer `name` at x's shape: the faster where they agree."""
    why = op_unavailable(x, op_args, dtype, switches)
    if why:
        return LayerChoice("cudnn", why)
    if torch.cuda.is_current_stream_capturing():
        return LayerChoice("cudnn", "capturing")
    want, got = cudnn(), op()       # the first calls also warm both up
    err = relative_error(got, want)
    if not err <= CHOICE_REL_TOL:
        log.warning("conv9x9 op disagrees with cuDNN on %s %s (rel err %.3g): keeping cuDNN",
                    name, tuple(x.shape), err)
        return LayerChoice("cudnn", f"op disagrees with cuDNN (rel err {err:.3g})")
    op_ms, cudnn_ms = median_ms(op), median_ms(cudnn)
    faster = op_ms < cudnn_ms
    choice = LayerChoice("styleforge" if faster else "cudnn", "faster" if faster else "slower", op_ms, cudnn_ms)
    log.info("%s %s: conv9x9 op %.3f ms, cuDNN %.3f ms → %s", name, tuple(x.shape), op_ms, cudnn_ms,
             choice.provider)
    return choice


def choose_plan(capture: Callable, shape: tuple[int, ...]):
    """(graph entry, LayerChoice) of the fastest plan at `shape`: the cuDNN plan's graph, then each
    of CANDIDATE_PLANS', captured by `capture(plan)` (an entry with .graph and .static_out) and timed
    by replay; a candidate must match the cuDNN plan's frame. (The fused residual chain wins at 512²
    and not on large planes: one block per tile; the persistent chain only where every tile is
    resident, and the separate links overlap on small planes.) One candidate graph is alive besides
    the best at any time, so capture memory stays at two."""
    best = capture("cudnn")
    best.graph.replay()
    reference = best.static_out.clone()   # the cuDNN plan's frame, which every candidate must match
    cudnn_ms = best_ms = median_ms(best.graph.replay)
    best_plan, why, plans = "cudnn", "slower", {"cudnn": cudnn_ms}
    for candidate in CANDIDATE_PLANS:
        entry = capture(candidate)
        entry.graph.replay()
        err = relative_error(entry.static_out, reference)
        if not err <= CHOICE_REL_TOL:
            log.warning("plan %s disagrees with the cuDNN plan at %s (rel err %.3g): not used", candidate, shape, err)
            why = f"{candidate} disagrees with cuDNN (rel err {err:.3g})"
            continue
        ms = plans[candidate] = median_ms(entry.graph.replay)
        log.info("plan %s at %s: %.3f ms per frame (best so far %s, %.3f ms)", candidate, shape, ms,
                 best_plan, best_ms)
        if ms < best_ms:
            best, best_ms, best_plan = entry, ms, candidate
        del entry
    return best, LayerChoice(best_plan, "faster" if best_plan != "cudnn" else why, best_ms, cudnn_ms, plans)
