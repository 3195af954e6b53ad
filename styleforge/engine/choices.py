"""How the fused engine records and times its per-shape choices between implementations.

`LayerChoice` is what `FusedRunner.layer_choices` holds for a (layer, input shape): which
implementation runs there (our op, a fused plan, or cuDNN) and why. `median_ms` times a callable
with CUDA events, the way every such choice is made: outside capture, on the real input, after
the candidates' outputs agree within CHOICE_REL_TOL. Not a benchmark (that is `styleforge.bench`):
a few repetitions, enough to rank two paths that differ by more than their noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

CHOICE_REPS = 5        # timed calls per candidate
CHOICE_REL_TOL = 5e-2  # a candidate must agree with cuDNN's result this well before it may be chosen


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
