"""The aimed last transport on the CPU: `palette.aimed_transport`'s result, its palette distances
sorted by NumPy.

`aimed_transport_numpy(image, code, base, target, cap)` has `aimed_transport`'s contract (float
(B, 3, H, W) in 0–255 → (image float32 clamped 0–255, share (B,))) and result (the tests hold the
two equal within float32 rounding). Why a second form: on the CPU the PyTorch rule spends most of
its time in `torch.sort` of the two images' (B, 32, N) projections (N = 65,536 for a square
256-px shrink), which also makes int64 indices the rule never reads; NumPy sorts the floats alone,
several times faster (docs/cpu.md has the numbers). Both images are measured in one batch: one
shrink (torch's own antialiased filter, so the measure is the PyTorch form's), one projection, one
sort. The full transport is `palette_numpy`'s. Not the GPU path: there `aimed_transport` runs
inside the engine's CUDA graph, with no host synchronisation.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .palette import PaletteCode
from .palette_numpy import moved_numpy
from .palette_share import _DIRECTIONS, _level_taps, adaptive_share, measure_size

_DIRECTIONS_T = np.ascontiguousarray(_DIRECTIONS.T, dtype=np.float32)     # (32, 3)


def measure_quantiles_numpy(image: torch.Tensor) -> np.ndarray:
    """`palette_share.measure_quantiles` on the CPU: image (B, 3, H, W) 0–255 → (B, 32, 101)
    float32 NumPy, the colours' quantiles along the tool's directions after the 256-px shrink."""
    if image.device.type != "cpu":
        raise ValueError(f"the NumPy palette measure runs on the CPU; the image is on {image.device}")
    small = F.interpolate(image.float(), size=measure_size(*image.shape[-2:]), mode="bilinear",
                          align_corners=False, antialias=True)
    pix = small.flatten(2).numpy()                                             # (B, 3, N)
    # einsum, not `@`: NumPy hands a 32×3 by 3×N product to BLAS, which is slower at it.
    ordered = np.sort(np.einsum("dc,bcn->bdn", _DIRECTIONS_T, pix), axis=-1)    # (B, 32, N)
    lo, hi, frac = (t.numpy() for t in _level_taps(ordered.shape[-1], "cpu"))   # the PyTorch form's taps
    below = ordered[..., lo]
    return below + frac * (ordered[..., hi] - below)


def aimed_transport_numpy(image: torch.Tensor, code: PaletteCode, base: float, target: float,
                          cap: float) -> tuple[torch.Tensor, torch.Tensor]:
    """`palette.aimed_transport` on the CPU (see the module docstring)."""
    start, moved = moved_numpy(image, code)
    full = moved.view(image.shape).clamp(0, 255)
    aim = code.measure.detach().float().cpu().numpy()                          # (B or 1, 32, 101)
    aim = np.broadcast_to(aim, (len(image), *aim.shape[1:]))
    both = measure_quantiles_numpy(torch.cat([image.float(), full]))          # image's, then full's
    d = torch.from_numpy(np.abs(both - np.concatenate([aim, aim])).mean((1, 2), dtype=np.float32))
    share = adaptive_share(d[:len(image)], d[len(image):], base, target, cap)
    return torch.lerp(start, moved, share.view(-1, 1, 1)).view(image.shape).clamp(0, 255), share
