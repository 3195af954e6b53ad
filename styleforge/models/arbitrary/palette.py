"""Colour distributions of the arbitrary-style model: sliced quantiles, transport and distance.

A painting's palette is kept as the quantiles of its pixels' colours projected on a few fixed
orthonormal bases (`PaletteCode`, computed once per painting beside its style code). Two uses:

transport (inference): iterative sliced optimal transport of an image's colours toward the
    painting's (Pitié et al. 2007, "Automated colour grading using colour distribution
    transfer"; Bonneel et al. 2015): per basis, every pixel's three coordinates are moved to the
    painting's value at the same quantile, a monotone map per axis, so edges and shading order
    are kept while the palette becomes the painting's. The first basis is the painting's own
    principal axes (decorrelated colour: one step already matches most of the distribution);
    the others are fixed random rotations. `strength` < 1 moves part of the way.
sliced_wasserstein (training loss and measure): the mean absolute gap between the two colour
    distributions' quantiles along random directions, in 0–255 units, differentiable in the
    first image (the quantiles of a sort). `shared/tools/style_metrics.py`'s palette_dist is
    this distance with its own 32 directions and 101 quantiles on 256-px images.
Images are float (B, 3, H, W) in 0–255. Not the attention's statistics (`transfer.py`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

QUANTILES = 256          # per axis: enough for a smooth 8-bit map, cheap to interpolate
BASES = 6                # transport iterations (one basis each); the first is the painting's PCA
MAX_SAMPLE = 65_536      # pixels a quantile is estimated from (a strided subset of bigger images)


@dataclass
class PaletteCode:
    """A painting's colour quantiles along each basis' three axes."""
    bases: torch.Tensor      # (B, K, 3, 3): rows are the axes, orthonormal
    quantiles: torch.Tensor  # (B, K, 3, Q) sorted projections of the painting's colours

    def to(self, device=None) -> PaletteCode:
        return PaletteCode(self.bases.to(device), self.quantiles.to(device))


def pixels(image: torch.Tensor, max_pixels: int = MAX_SAMPLE) -> torch.Tensor:
    """(B, 3, H, W) → (B, N, 3) float32, a strided subset of at most `max_pixels` pixels."""
    flat = image.float().flatten(2).transpose(1, 2)
    stride = max(1, -(-flat.shape[1] // max_pixels))
    return flat[:, ::stride]


def random_bases(count: int, seed: int = 0, device=None) -> torch.Tensor:
    """(count, 3, 3) fixed orthonormal bases (QR of seeded Gaussians, signs fixed)."""
    g = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(count, 3, 3, generator=g, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
    return q.transpose(-1, -2).float().to(device)


def principal_axes(colours: torch.Tensor) -> torch.Tensor:
    """(B, N, 3) → (B, 3, 3) rows = eigenvectors of the colour covariance, largest first."""
    centred = colours - colours.mean(1, keepdim=True)
    cov = centred.transpose(1, 2) @ centred / colours.shape[1]
    _, vecs = torch.linalg.eigh(cov.double())
    return vecs.flip(-1).transpose(-1, -2).float()


def quantile_grid(n: int, device=None) -> torch.Tensor:
    return (torch.arange(n, device=device, dtype=torch.float32) + 0.5) / n


def sorted_quantiles(values: torch.Tensor, count: int) -> torch.Tensor:
    """(..., N) → (..., count): the values at the centred quantile levels (linear interpolation)."""
    ordered = values.sort(dim=-1).values
    n = ordered.shape[-1]
    pos = quantile_grid(count, values.device) * n - 0.5
    lo = pos.floor().clamp(0, n - 1).long()
    hi = (lo + 1).clamp(max=n - 1)
    frac = (pos - lo.float()).clamp(0, 1)
    return ordered[..., lo] * (1 - frac) + ordered[..., hi] * frac


def encode_palette(painting: torch.Tensor, bases: int = BASES, quantiles: int = QUANTILES) -> PaletteCode:
    """painting (B, 3, H, W) 0–255 → its PaletteCode."""
    colours = pixels(painting)
    axes = torch.cat([principal_axes(colours).unsqueeze(1),
                      random_bases(bases - 1, device=colours.device).expand(colours.shape[0], -1, -1, -1)], 1)
    proj = torch.einsum("bkij,bnj->bkin", axes, colours)                      # (B, K, 3, N)
    return PaletteCode(axes, sorted_quantiles(proj, quantiles))


def _monotone_map(x: torch.Tensor, src_q: torch.Tensor, dst_q: torch.Tensor) -> torch.Tensor:
    """Piecewise-linear map taking quantiles src_q → dst_q, per row; x (R, N), src_q, dst_q (R, Q).
    Outside the source range it shifts by the end offsets (no clamping to the painting's range)."""
    q = src_q.shape[-1]
    idx = torch.searchsorted(src_q.contiguous(), x.contiguous()).clamp(1, q - 1)
    x0, x1 = src_q.gather(-1, idx - 1), src_q.gather(-1, idx)
    y0, y1 = dst_q.gather(-1, idx - 1), dst_q.gather(-1, idx)
    t = ((x - x0) / (x1 - x0).clamp_min(1e-6)).clamp(0, 1)
    inside = y0 + t * (y1 - y0)
    below = x - src_q[..., :1] + dst_q[..., :1]
    above = x - src_q[..., -1:] + dst_q[..., -1:]
    return torch.where(x < src_q[..., :1], below, torch.where(x > src_q[..., -1:], above, inside))


def transport(image: torch.Tensor, code: PaletteCode, strength: float = 1.0) -> torch.Tensor:
    """image (B, 3, H, W) 0–255 → its colours moved toward the painting's; float32, clamped 0–255.
    Each basis: project, map each axis by the image's quantiles → the painting's, rotate back."""
    b, _, h, w = image.shape
    x = image.float().flatten(2)                                               # (B, 3, N)
    start = x
    stride = max(1, -(-x.shape[-1] // MAX_SAMPLE))
    for k in range(code.bases.shape[1]):
        axes = code.bases[:, k]                                                # (B, 3, 3)
        proj = axes @ x                                                        # (B, 3, N)
        src_q = sorted_quantiles(proj[..., ::stride], code.quantiles.shape[-1])
        moved = _monotone_map(proj.reshape(b * 3, -1), src_q.reshape(b * 3, -1),
                              code.quantiles[:, k].reshape(b * 3, -1)).view(b, 3, -1)
        x = x + axes.transpose(1, 2) @ (moved - proj)
    if strength < 1.0:
        x = torch.lerp(start, x, strength)
    return x.view(b, 3, h, w).clamp(0, 255)


def sliced_wasserstein(a: torch.Tensor, b: torch.Tensor, directions: int = 32, quantiles: int = 128,
                       seed: int = 0) -> torch.Tensor:
    """(B, 3, H, W) × (B, 3, H', W') 0–255 → (B,) mean |quantile gap| over random unit directions.
    Differentiable in both (gradients flow through the sorts); sizes may differ."""
    g = torch.Generator().manual_seed(seed)
    dirs = torch.randn(3, directions, generator=g)
    dirs = (dirs / dirs.norm(dim=0, keepdim=True)).to(a.device)
    pa = (pixels(a, 1 << 30) @ dirs).transpose(1, 2)                           # (B, D, N)
    pb = (pixels(b, 1 << 30) @ dirs).transpose(1, 2)
    return (sorted_quantiles(pa, quantiles) - sorted_quantiles(pb, quantiles)).abs().mean((1, 2))
