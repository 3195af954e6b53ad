"""A painting's palette code on the CPU: `palette.encode_palette`'s result, its sorts done by NumPy.

`encode_palette_numpy(painting)` has `encode_palette`'s contract (float (B, 3, H, W) in 0–255 →
`PaletteCode`) and result: the same bases bit for bit (the principal axes are `palette`'s own
function on the same pixels: a 3×3 eigenproblem is cheap, and a covariance rounded differently
could turn the axes of a near-degenerate one), the quantiles and the measure within float32
rounding (the tests hold them to the PyTorch form's). Why a second form: on the CPU the PyTorch
form spends most of its time in `torch.sort`, of the six bases' (B, 6, 3, N) projections and of
the measure's (B, 32, N), which also makes int64 indices the code never reads; NumPy sorts the
floats alone, several times faster (docs/cpu.md has the numbers). The measure is
`palette_share_numpy`'s. Not the CUDA path: there `encode_palette` runs on the device.
"""
from __future__ import annotations

import numpy as np
import torch

from .palette import BASES, QUANTILES, PaletteCode, cached_quantile_taps, pixels, principal_axes, random_bases
from .palette_share_numpy import measure_quantiles_numpy


def encode_palette_numpy(painting: torch.Tensor, bases: int = BASES, quantiles: int = QUANTILES) -> PaletteCode:
    """`palette.encode_palette` on the CPU: painting (B, 3, H, W) 0–255 → its PaletteCode."""
    if painting.device.type != "cpu":
        raise ValueError(f"the NumPy palette code runs on the CPU; the painting is on {painting.device}")
    painting = painting.detach()
    colours = pixels(painting)                                                 # (B, N, 3), a strided view
    axes = torch.cat([principal_axes(colours).unsqueeze(1),
                      random_bases(bases - 1).expand(colours.shape[0], -1, -1, -1)], 1)   # (B, K, 3, 3)
    lo, hi, frac = (t.numpy() for t in cached_quantile_taps(colours.shape[1], quantiles, "cpu"))
    # Copied to (B, 3, N) first: einsum over the strided (B, N, 3) view is ~10× slower. einsum,
    # not `@`: NumPy hands a 3×3 by 3×N product to BLAS, which is slower at it.
    x = np.ascontiguousarray(colours.transpose(1, 2).numpy())
    proj = np.einsum("bkij,bjn->bkin", axes.numpy(), x)                       # (B, K, 3, N)
    ordered = np.sort(proj, axis=-1)
    table = ordered[..., lo] * (1 - frac) + ordered[..., hi] * frac            # as `sorted_quantiles`
    return PaletteCode(axes, torch.from_numpy(table), torch.from_numpy(measure_quantiles_numpy(painting)))
