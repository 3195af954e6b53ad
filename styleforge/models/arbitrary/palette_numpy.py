"""The palette transport on the CPU, in NumPy: `palette.transport`'s map, computed in two phases.

`transport_numpy(image, code, strength, threads)` has `palette.transport`'s contract (float
(B, 3, H, W) in 0–255 → float32, clamped) and result (equal within float32 rounding; the tests
hold both to one float64 reference). Why a second implementation: on the CPU the PyTorch form
spends its time in `torch.sort`, which also makes int64 indices the transport never reads, and in
searchsorted and four gathers over every pixel per basis; NumPy sorts floats alone and its
searchsorted and `take` are cheaper per element (docs/cpu.md has the numbers).

Two phases. (1) The strided sample the quantiles are read from (`palette.MAX_SAMPLE`) goes through
the bases alone: the map moves each colour on its own, so a sample pixel lands where it would if
the whole image moved with it, and every basis' source quantiles come out exactly as the full
transport finds them. (2) Every pixel then goes through the bases' fixed piecewise-linear maps,
in `threads` contiguous chunks on a thread pool (NumPy releases the GIL in its sorts, searches
and element-wise loops), with each segment's slope taken once per basis instead of per pixel.
Not a lookup table: a 3-D colour LUT of this map was tried and rejected (its steep parts need a
finer grid than the image has pixels; docs/cpu.md). Not the CUDA path: there `palette.transport`
runs inside the engine's CUDA graph.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from .palette import MAX_SAMPLE, PaletteCode, cached_quantile_taps

_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="palette")
    return _POOLS[threads]


class Segments:
    """One axis' map as segments: knots x0 < x1 (the image's quantiles), y0 and the rise dy (the
    painting's), 1 / width. Segment i joins knots i and i + 1, as `palette._monotone_map` picks them."""

    def __init__(self, src: np.ndarray, dst: np.ndarray):
        self.src = src
        self.x0, self.x1, self.y0 = src[:-1], src[1:], dst[:-1]
        self.dy = dst[1:] - dst[:-1]
        self.inv = np.float32(1) / np.maximum(self.x1 - self.x0, np.float32(1e-6))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """x (N,) float32 → mapped: linear inside the knots, shifted by the end offsets outside."""
        seg = np.searchsorted(self.src, x, side="left")
        np.clip(seg, 1, len(self.src) - 1, out=seg)
        seg -= 1
        x0, x1 = self.x0.take(seg), self.x1.take(seg)
        t = (x - x0) * self.inv.take(seg)
        np.clip(t, 0, 1, out=t)
        out = self.y0.take(seg) + t * self.dy.take(seg)
        out += x
        out -= np.clip(x, x0, x1)       # 0 inside the knots; beyond the ends, how far beyond
        return out


def _step(x: np.ndarray, axes: np.ndarray, maps: list[Segments]) -> np.ndarray:
    """One basis: x (3, N) → project on the axes' rows, map each axis, rotate the change back."""
    proj = axes @ x
    moved = np.stack([m(p) for m, p in zip(maps, proj)])
    moved -= proj
    return x + axes.T @ moved


def _apply(x: np.ndarray, bases: np.ndarray, maps: list[list[Segments]]) -> np.ndarray:
    for axes, axis_maps in zip(bases, maps):
        x = _step(x, axes, axis_maps)
    return x


def sample_maps(x: np.ndarray, code_bases: np.ndarray, code_quantiles: np.ndarray) -> list[list[Segments]]:
    """Phase 1: x (3, N) float32 → per basis, per axis, the `Segments` of its map (the image's
    quantiles, read from the strided sample as it moves, onto the painting's)."""
    stride = max(1, -(-x.shape[1] // MAX_SAMPLE))
    sample = np.ascontiguousarray(x[:, ::stride])
    lo, hi, frac = (t.numpy() for t in cached_quantile_taps(sample.shape[1], code_quantiles.shape[-1], "cpu"))
    maps = []
    for axes, dst in zip(code_bases, code_quantiles):
        proj = axes @ sample
        ordered = np.sort(proj, axis=-1)
        below = ordered[:, lo]
        src = below + frac * (ordered[:, hi] - below)     # exact where the two are equal
        maps.append([Segments(s, d) for s, d in zip(src, dst)])
        sample = _step(sample, axes, maps[-1])
    return maps


def transport_numpy(image: torch.Tensor, code: PaletteCode, strength: float = 1.0,
                    threads: int | None = None) -> torch.Tensor:
    """`palette.transport` on the CPU: image (B, 3, H, W) 0–255 → float32 (B, 3, H, W), clamped.
    `threads`: chunks run at once (default: torch's intra-op thread count)."""
    if image.device.type != "cpu":
        raise ValueError(f"transport_numpy runs on the CPU; the image is on {image.device}")
    threads = max(1, threads or torch.get_num_threads())
    b, _, h, w = image.shape
    bases = code.bases.detach().float().cpu().numpy()
    quantiles = code.quantiles.detach().float().cpu().numpy()
    out = []
    for i in range(b):
        x = np.ascontiguousarray(image[i].detach().float().reshape(3, -1).numpy())
        maps = sample_maps(x, bases[i], quantiles[i])
        bounds = np.linspace(0, x.shape[1], threads + 1).round().astype(int)
        chunks = [x[:, lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
        if len(chunks) > 1:
            moved = np.concatenate(list(_pool(len(chunks)).map(lambda c: _apply(c, bases[i], maps), chunks)), 1)
        else:
            moved = _apply(x, bases[i], maps)
        if strength < 1.0:
            moved = x + np.float32(strength) * (moved - x)
        out.append(torch.from_numpy(np.clip(moved, 0, 255, out=moved)).view(3, h, w))
    return torch.stack(out)
