"""`degrid` on the CPU, in NumPy: the same filter, as slices and sums instead of torch's ops.

`degrid_numpy(image, window)` has `degrid.degrid`'s contract (float (N, C, H, W) → float32, the
4-px-periodic, phase-locked component removed) and result (equal within float32 rounding; the
tests hold it to the PyTorch form). Why a second implementation: on the CPU the PyTorch form is a
chain of small ops (two depthwise convolutions, pixel_unshuffle, a pooling, pixel_shuffle) on a
3-channel image, where torch's intra-op threads cost more CPU than they save (docs/cpu.md has the
numbers). Here the 5-tap low-pass is four shifted adds per axis, the 4×4 phases are one reshape,
and the 5×5 window mean over blocks is a running sum per axis, on one thread.
Not the CUDA path: there `degrid.degrid` runs inside the engine's CUDA graph.
"""
from __future__ import annotations

import numpy as np
import torch

from .degrid import PERIOD, WINDOW


def _lowpass_axis(x: np.ndarray, axis: int) -> np.ndarray:
    """[1, 2, 2, 2, 1]/8 along `axis` (2 or 3), reflected borders (torch's 'reflect')."""
    n = x.shape[axis]
    pad = [(0, 0)] * 4
    pad[axis] = (2, 2)
    p = np.pad(x, pad, mode="reflect")

    def tap(i: int) -> np.ndarray:
        return p[:, :, i:i + n] if axis == 2 else p[:, :, :, i:i + n]
    out = tap(1) + tap(2)
    out += tap(3)
    out *= 2.0
    out += tap(0)
    out += tap(4)
    out *= 1.0 / 8
    return out


def _window_mean(x: np.ndarray, window: int, mode: str) -> np.ndarray:
    """Mean over a window × window neighbourhood of the last two axes, borders padded by `mode`."""
    r = window // 2
    p = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(r, r), (r, r)], mode=mode)
    h, w = x.shape[-2:]
    rows = p[..., 0:h, :].copy()
    for i in range(1, window):
        rows += p[..., i:i + h, :]
    out = rows[..., 0:w].copy()
    for j in range(1, window):
        out += rows[..., j:j + w]
    out *= 1.0 / (window * window)
    return out


def degrid_numpy(image: torch.Tensor, window: int = WINDOW) -> torch.Tensor:
    """(N, C, H, W) float on the CPU → the same, float32, its 4-px lattice removed (`degrid`)."""
    x = image.detach().float().numpy()
    n, c, h, w = x.shape
    if min(h, w) < 8:
        return torch.from_numpy(x.copy())
    detail = x - _lowpass_axis(_lowpass_axis(x, 3), 2)
    ph, pw = (-h) % PERIOD, (-w) % PERIOD
    if ph or pw:
        detail = np.pad(detail, ((0, 0), (0, 0), (0, ph), (0, pw)), mode="reflect")
    hb, wb = detail.shape[2] // PERIOD, detail.shape[3] // PERIOD
    # (N, C, H, W) → (N, C, 4, 4, H/4, W/4): each phase (y mod 4, x mod 4) as its own plane.
    phases = detail.reshape(n, c, hb, PERIOD, wb, PERIOD).transpose(0, 1, 3, 5, 2, 4)
    mode = "reflect" if min(hb, wb) > window // 2 else "edge"
    local = _window_mean(phases, window, mode)
    local -= local.mean(axis=(2, 3), keepdims=True)
    pattern = local.transpose(0, 1, 4, 2, 5, 3).reshape(n, c, hb * PERIOD, wb * PERIOD)
    return torch.from_numpy(x - pattern[:, :, :h, :w])
