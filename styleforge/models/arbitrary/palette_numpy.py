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


BINS = 8192   # uniform bins per axis map: a knot-free bin's colours share one line, found without a search


class AxisMap:
    """One axis' map, `palette._monotone_map` for fixed knots src → dst (Q each), as lines found by
    binning instead of searching.

    With r = the number of knots below x (searchsorted, left), the map is a line Y + S·(x − X):
    r = 0 is the low end (slope 1 through the first knot pair), r = Q the high end, and otherwise
    the segment from knot r − 1 to knot r. Binning x uniformly keeps order (the same float32
    steps for x and the knots, each monotone), so a knot in a lower bin is below x and one in a
    higher bin is above it: where a bin holds at most one distinct knot value v, r is the knots in
    lower bins plus, when x > v, that bin's count, and each bin needs only two lines. Colours in a
    bin with two or more distinct values (knots closer than a bin) are searched as before."""

    def __init__(self, src: np.ndarray, dst: np.ndarray, bins: int = BINS):
        q = len(src)
        self.src = src
        inv = np.float32(1) / np.maximum(src[1:] - src[:-1], np.float32(1e-6))
        self.x = np.concatenate([src[:1], src[:-1], src[-1:]])                 # (Q + 1,) by r
        self.y = np.concatenate([dst[:1], dst[:-1], dst[-1:]])
        self.s = np.concatenate([[1], (dst[1:] - dst[:-1]) * inv, [1]]).astype(np.float32)
        self.lo = src[0]
        self.scale = np.float32(bins / max(float(src[-1] - src[0]), 1e-20))
        self.bins = bins
        b = self.bin(src)
        count = np.bincount(b, minlength=bins)
        below = np.cumsum(count) - count
        first = np.minimum(below, q - 1)
        last = np.minimum(below + count - 1, q - 1)
        self.value = np.where(count > 0, src[first], np.float32(np.inf)).astype(np.float32)
        self.crowded = np.flatnonzero((count > 0) & (src[last] != src[first]))
        r = np.stack([below, below + count], 1).ravel()                        # (2 · bins,) by 2b + (x > v)
        self.line_x, self.line_y, self.line_s = self.x[r], self.y[r], self.s[r]

    def bin(self, x: np.ndarray) -> np.ndarray:
        t = (x - self.lo) * self.scale
        np.clip(t, 0, self.bins - 1, out=t)
        return t.astype(np.intp)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """x (N,) float32 → mapped: linear inside the knots, shifted by the end offsets outside."""
        b = self.bin(x)
        j = b * 2
        j += x > self.value.take(b)
        out = x - self.line_x.take(j)
        out *= self.line_s.take(j)
        out += self.line_y.take(j)
        if len(self.crowded):
            at = np.flatnonzero(np.isin(b, self.crowded))
            if len(at):
                xs = x[at]
                r = np.searchsorted(self.src, xs, side="left")
                out[at] = self.y.take(r) + self.s.take(r) * (xs - self.x.take(r))
        return out


def _step(x: np.ndarray, axes: np.ndarray, maps: list[AxisMap], proj: np.ndarray | None = None) -> np.ndarray:
    """One basis: x (3, N) → project on the axes' rows (`proj`, when already made), map each axis,
    rotate the change back.
    einsum, not `@`: NumPy hands a 3×3 by 3×N product to BLAS, which is many times slower at it."""
    proj = np.einsum("ij,jn->in", axes, x) if proj is None else proj
    moved = np.stack([m(p) for m, p in zip(maps, proj)])
    moved -= proj
    moved = np.einsum("ji,jn->in", axes, moved)
    moved += x
    return moved


def _apply(x: np.ndarray, bases: np.ndarray, maps: list[list[AxisMap]]) -> np.ndarray:
    for axes, axis_maps in zip(bases, maps):
        x = _step(x, axes, axis_maps)
    return x


def sample_maps(x: np.ndarray, code_bases: np.ndarray, code_quantiles: np.ndarray) -> list[list[AxisMap]]:
    """Phase 1: x (3, N) float32 → per basis, per axis, the `AxisMap` of its map (the image's
    quantiles, read from the strided sample as it moves, onto the painting's)."""
    stride = max(1, -(-x.shape[1] // MAX_SAMPLE))
    sample = np.ascontiguousarray(x[:, ::stride])
    lo, hi, frac = (t.numpy() for t in cached_quantile_taps(sample.shape[1], code_quantiles.shape[-1], "cpu"))
    maps = []
    for axes, dst in zip(code_bases, code_quantiles):
        proj = np.einsum("ij,jn->in", axes, sample)
        ordered = np.sort(proj, axis=-1)
        below = ordered[:, lo]
        src = below + frac * (ordered[:, hi] - below)     # exact where the two are equal
        maps.append([AxisMap(s, d) for s, d in zip(src, dst)])
        sample = _step(sample, axes, maps[-1], proj)
    return maps


def moved_numpy(image: torch.Tensor, code: PaletteCode,
                threads: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """`palette._moved` on the CPU: image (B, 3, H, W) 0–255 → (start, moved), both (B, 3, H·W)
    float32, unclamped: the full transport. `threads`: chunks run at once (default: torch's
    intra-op thread count)."""
    if image.device.type != "cpu":
        raise ValueError(f"the NumPy transport runs on the CPU; the image is on {image.device}")
    threads = max(1, threads or torch.get_num_threads())
    # One painting's code serves a batch of photos (as the PyTorch form broadcasts it).
    n = image.shape[0]
    bases = np.broadcast_to(code.bases.detach().float().cpu().numpy(), (n, *code.bases.shape[1:]))
    quantiles = np.broadcast_to(code.quantiles.detach().float().cpu().numpy(), (n, *code.quantiles.shape[1:]))
    starts, out = [], []
    for i in range(image.shape[0]):
        x = np.ascontiguousarray(image[i].detach().float().reshape(3, -1).numpy())
        maps = sample_maps(x, bases[i], quantiles[i])
        bounds = np.linspace(0, x.shape[1], threads + 1).round().astype(int)
        chunks = [x[:, lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
        if len(chunks) > 1:
            moved = np.concatenate(list(_pool(len(chunks)).map(lambda c: _apply(c, bases[i], maps), chunks)), 1)
        else:
            moved = _apply(x, bases[i], maps)
        starts.append(torch.from_numpy(x))
        out.append(torch.from_numpy(moved))
    return torch.stack(starts), torch.stack(out)


def transport_numpy(image: torch.Tensor, code: PaletteCode, strength: float = 1.0,
                    threads: int | None = None) -> torch.Tensor:
    """`palette.transport` on the CPU: image (B, 3, H, W) 0–255 → float32 (B, 3, H, W), clamped.
    `threads`: chunks run at once (default: torch's intra-op thread count)."""
    start, moved = moved_numpy(image, code, threads)
    if strength < 1.0:
        moved = torch.lerp(start, moved, strength)
    return moved.view(image.shape).clamp_(0, 255)
