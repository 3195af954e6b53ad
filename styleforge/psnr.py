"""Peak signal-to-noise ratio: the one measure behind every fidelity gate in the package (the
benchmarks' fp32 check, export, tiling, the INT8 form checks, the pipeline floor).

dB over `peak` (255: pixels as a user sees them), summed in float64 in slices, so a gigapixel
pair never needs a float64 copy of itself. Takes NumPy arrays or torch tensors (a tensor `b` is
moved to `a`'s device), without importing torch. Not a perceptual measure: the style metrics
(`../shared/tools/style_metrics.py`) judge how a result looks."""
from __future__ import annotations

import math

import numpy as np

SLICE = 1 << 24   # elements summed at once: 128 MiB of float64


def _squared_error(a, b) -> float:
    if isinstance(a, np.ndarray):
        return float(np.square(a.astype(np.float64) - np.asarray(b, dtype=np.float64)).sum())
    return float(((a.detach().double() - b.detach().to(a.device).double()) ** 2).sum())


def psnr(a, b, peak: float = 255.0, clip: bool = False) -> float:
    """PSNR of `a` against `b` (same shape); `clip` first clamps both to [0, peak], as written."""
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"PSNR of shapes {tuple(a.shape)} and {tuple(b.shape)}: they must match")
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    count = int(flat_a.shape[0])
    total = 0.0
    for start in range(0, count, SLICE):
        x, y = flat_a[start:start + SLICE], flat_b[start:start + SLICE]
        if clip:
            x, y = (v.clip(0, peak) for v in (x, y))
        total += _squared_error(x, y)
    mse = total / count if count else 0.0
    return math.inf if mse == 0 else 10.0 * math.log10(peak * peak / mse)
