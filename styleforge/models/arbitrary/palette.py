"""Colour distributions of the arbitrary-style model: sliced quantiles, transport and distance.

A painting's palette is kept as the quantiles of its pixels' colours projected on a few fixed
orthonormal bases (`PaletteCode`, computed once per painting beside its style code). Two uses:

transport (inference): iterative sliced optimal transport of an image's colours toward the
    painting's (Pitié et al. 2007, "Automated colour grading using colour distribution
    transfer"; Bonneel et al. 2015): per basis, every pixel's three coordinates are moved to the
    painting's value at the same quantile, a monotone map per axis, so edges and shading order
    are kept while the palette becomes the painting's. The first basis is the painting's own
    principal axes (decorrelated colour: one step already matches most of the distribution);
    the others are fixed random rotations. `strength` < 1 moves part of the way;
    `aimed_transport` picks that share per image (`palette_share.py`).
sliced_wasserstein (training loss and measure): the mean absolute gap between the two colour
    distributions' quantiles along random directions, in 0–255 units, differentiable in the
    first image (the quantiles of a sort). `shared/tools/style_metrics.py`'s palette_dist is
    this distance with its own 32 directions and 101 quantiles on 256-px images.
Images are float (B, 3, H, W) in 0–255. Not the attention's statistics (`transfer.py`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .palette_share import adaptive_share, measure_quantiles, palette_distance

QUANTILES = 256          # per axis: enough for a smooth 8-bit map, cheap to interpolate
BASES = 6                # transport iterations (one basis each); the first is the painting's PCA
MAX_SAMPLE = 65_536      # pixels a quantile is estimated from (a strided subset of bigger images)


@dataclass
class PaletteCode:
    """A painting's colour quantiles along each basis' three axes."""
    bases: torch.Tensor      # (B, K, 3, 3): rows are the axes, orthonormal
    quantiles: torch.Tensor  # (B, K, 3, Q) sorted projections of the painting's colours
    measure: torch.Tensor | None = None  # (B, 32, 101) palette_share.measure_quantiles: the aim

    def to(self, device=None) -> PaletteCode:
        measure = None if self.measure is None else self.measure.to(device)
        return PaletteCode(self.bases.to(device), self.quantiles.to(device), measure)


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


def quantile_taps(n: int, count: int, device=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where the centred quantile levels fall among n sorted values: (lo, hi, frac), each (count,)."""
    pos = quantile_grid(count, device) * n - 0.5
    lo = pos.floor().clamp(0, n - 1).long()
    hi = (lo + 1).clamp(max=n - 1)
    return lo, hi, (pos - lo.float()).clamp(0, 1)


_TAPS: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}


def cached_quantile_taps(n: int, count: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`quantile_taps`, made once per (n, count, device): the transport runs in a CUDA graph per
    frame, where these ~10 small launches per basis would repeat for the same numbers. Made
    outside inference mode, so a later autograd use of the same shapes may read them too."""
    key = (n, count, torch.device(device))
    if key not in _TAPS:
        with torch.inference_mode(False):
            _TAPS[key] = quantile_taps(n, count, device)
    return _TAPS[key]


def sorted_quantiles(values: torch.Tensor, count: int, taps=None) -> torch.Tensor:
    """(..., N) → (..., count): the values at the centred quantile levels (linear interpolation).
    `taps`: `quantile_taps(N, count)` made beforehand (default: made here)."""
    ordered = values.sort(dim=-1).values
    lo, hi, frac = taps if taps is not None else quantile_taps(ordered.shape[-1], count, values.device)
    return ordered[..., lo] * (1 - frac) + ordered[..., hi] * frac


def encode_palette(painting: torch.Tensor, bases: int = BASES, quantiles: int = QUANTILES) -> PaletteCode:
    """painting (B, 3, H, W) 0–255 → its PaletteCode."""
    colours = pixels(painting)
    axes = torch.cat([principal_axes(colours).unsqueeze(1),
                      random_bases(bases - 1, device=colours.device).expand(colours.shape[0], -1, -1, -1)], 1)
    proj = torch.einsum("bkij,bnj->bkin", axes, colours)                      # (B, K, 3, N)
    return PaletteCode(axes, sorted_quantiles(proj, quantiles), measure_quantiles(painting))


def _monotone_map(x: torch.Tensor, src_q: torch.Tensor, dst_q: torch.Tensor) -> torch.Tensor:
    """Piecewise-linear map taking quantiles src_q → dst_q, per row; x (..., N), src_q, dst_q (..., Q).
    Outside the source range it shifts by the end offsets (no clamping to the painting's range)."""
    # Written for few launches (it runs per basis on every pixel, in the engine's CUDA graph):
    # outside the source range the segment index is the end one and t is clamped to 0 or 1, so
    # the end offsets are the x − clamp(x, x0, x1) term (0 inside), with no masks or selects; the
    # two tables are gathered together; lerp is exact at t = 1. src_q is searched as given, not
    # reshaped: torch 2.11's inductor cannot lower searchsorted over a view of an unrealized tensor.
    q = src_q.shape[-1]
    idx = torch.searchsorted(src_q.contiguous(), x.contiguous()).clamp(1, q - 1)
    both = torch.cat([src_q, dst_q])                                   # (2R, Q)
    pick = idx.repeat(2, *([1] * (idx.dim() - 1)))
    lower, upper = both.gather(-1, pick - 1), both.gather(-1, pick)
    (x0, y0), (x1, y1) = lower.chunk(2), upper.chunk(2)
    t = ((x - x0) / (x1 - x0).clamp_min(1e-6)).clamp(0, 1)
    return torch.lerp(y0, y1, t) + (x - torch.clamp(x, x0, x1))


def _moved(image: torch.Tensor, code: PaletteCode) -> tuple[torch.Tensor, torch.Tensor]:
    """image (B, 3, H, W) → (start, moved), both (B, 3, H·W) float32, unclamped: the full transport.
    Each basis: project, map each axis by the image's quantiles → the painting's, rotate back."""
    x = image.float().flatten(2)                                               # (B, 3, N)
    start = x
    stride = max(1, -(-x.shape[-1] // MAX_SAMPLE))
    count = code.quantiles.shape[-1]
    taps = cached_quantile_taps(-(-x.shape[-1] // stride), count, x.device)
    # One painting's code serves a batch of photos: _monotone_map stacks its tables by batch.
    bases = code.bases.expand(x.shape[0], *code.bases.shape[1:])
    quantiles = code.quantiles.expand(x.shape[0], *code.quantiles.shape[1:])
    for k in range(bases.shape[1]):
        axes = bases[:, k]                                                     # (B, 3, 3)
        proj = axes @ x                                                        # (B, 3, N)
        src_q = sorted_quantiles(proj[..., ::stride], count, taps)
        moved = _monotone_map(proj, src_q, quantiles[:, k])
        x = x + axes.transpose(1, 2) @ (moved - proj)
    return start, x


def transport(image: torch.Tensor, code: PaletteCode, strength: float = 1.0) -> torch.Tensor:
    """image (B, 3, H, W) 0–255 → its colours moved `strength` of the way toward the painting's;
    float32, clamped 0–255."""
    start, x = _moved(image, code)
    if strength < 1.0:
        x = torch.lerp(start, x, strength)
    return x.view(image.shape).clamp(0, 255)


def aimed_transport(image: torch.Tensor, code: PaletteCode, base: float, target: float,
                    cap: float) -> tuple[torch.Tensor, torch.Tensor]:
    """`transport` with the share `palette_share.adaptive_share` picks per image: at least `base`,
    more (up to `cap`) where the palette distance to the painting is above `target`.
    → (image float32 clamped 0–255, share (B,)). Device ops only (no host synchronisation); on
    the CPU the engine runs its NumPy form (`palette_share_numpy`, the same result)."""
    start, x = _moved(image, code)
    full = x.view(image.shape).clamp(0, 255)
    d0, d1 = palette_distance(image, code.measure), palette_distance(full, code.measure)
    share = adaptive_share(d0, d1, base, target, cap)
    return torch.lerp(start, x, share.view(-1, 1, 1)).view(image.shape).clamp(0, 255), share


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
