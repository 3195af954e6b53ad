"""Playground version (never imported by the package): the feather's blur as it shipped from
0defd21 until the device's blur micro-bench (docs/temporal.md) — 2×2 average pools instead of a
convolution or `band_blur`'s GEMMs. cv2's 3- and 5-tap kernels of σ 0 ([1 2 1]/4 and
[1 4 6 4 1]/16) are the 2r-fold convolution of a [1 1]/2 box, so the blur along both axes is
2r average pools of 2×2 at stride 1, exact on 0/1 trust masks (bit for bit the convolution).
`blur_bench.py` times it beside the shipped form.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

BINOMIAL = {1: (0.25, 0.5, 0.25), 2: (0.0625, 0.25, 0.375, 0.25, 0.0625)}   # radius → cv2's σ-0 taps


def binomial_radius(taps) -> int | None:
    """r where `taps` (a sequence or CPU tensor) are cv2's binomial [1 2 1]/4 (r 1) or
    [1 4 6 4 1]/16 (r 2); None for any other kernel."""
    values = tuple(torch.as_tensor(taps, dtype=torch.float32).flatten().tolist())
    return next((radius for radius, kernel in BINOMIAL.items() if values == kernel), None)


def binomial_blur(image: torch.Tensor, radius: int) -> torch.Tensor:
    """(C, H, W) blurred by the binomial kernel of 2r + 1 taps along both axes, reflect-101
    borders: pad by r, then 2r 2×2 average pools at stride 1."""
    x = F.pad(image[None], (radius,) * 4, mode="reflect")
    for _ in range(2 * radius):
        x = F.avg_pool2d(x, 2, stride=1)
    return x[0]
