"""How far the last colour transport goes: issue 39's palette distance, measured and aimed at.

After the last pass the engine moves the image `share` of the way to the painting's palette
(`palette.transport`). A fixed quarter keeps the Gram style ratio but leaves a painting whose
colours are far from the photo's (a dark wallpaper, a bright photo) well above the palette bar.
The rule here raises the share for such a painting only, from two measurements per frame:

    d0 = D(image), d1 = D(full transport of the image)       D: the palette distance below
    share = clamp((d0 − target) / (d0 − d1), base, cap)      (base when d0 ≤ d1)

i.e. the share at which the straight line from (0, d0) to (1, d1) meets `target`. Along one
direction, lerping each pixel toward its monotone transport lerps the quantiles, so the true
distance lies on or below that line (a triangle inequality per quantile): the rule lands at or
under the target, up to how far the transport's maps differ from monotone along the measure's
directions. `cap` bounds what the Gram style ratio pays (a full map paints the painting's colours
on the photo's own contrast, docs/arbitrary.md). No host synchronisation: the share is a (B,)
device tensor, so the rule runs inside the engine's CUDA graph, per frame.

D is `shared/tools/style_metrics.py`'s palette_dist (and `training.arbitrary_eval.PairScorer`'s):
RGB colours of both images shrunk to 256 px on the longer side, projected on the tool's 32 fixed
directions (NumPy `default_rng(0)`), mean |gap| between their 101 quantiles (NumPy's "linear"
positions), 0–255 units. Here the shrink is torch's antialiased bilinear (PIL's bilinear
filter, not its rounding to 8 bits) and the painting's quantiles are made once, with its
`PaletteCode`. Not the transport (`palette.py`).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

MEASURE_SIDE = 256
MEASURE_LEVELS = 101
_DIRECTIONS = np.random.default_rng(0).normal(size=(3, 32))
_DIRECTIONS /= np.linalg.norm(_DIRECTIONS, axis=0)
_LEVEL_TAPS: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
_DIRECTION_TENSORS: dict[tuple, torch.Tensor] = {}


def directions(device=None, dtype=torch.float32) -> torch.Tensor:
    """(3, 32) the tool's unit directions; made once per (device, dtype) outside inference mode,
    so a CUDA graph's capture and torch.compile see a resident tensor, not a host copy."""
    key = (torch.device(device or "cpu"), dtype)
    if key not in _DIRECTION_TENSORS:
        with torch.inference_mode(False):
            _DIRECTION_TENSORS[key] = torch.tensor(_DIRECTIONS, dtype=dtype, device=key[0])
    return _DIRECTION_TENSORS[key]


def measure_size(h: int, w: int, side: int = MEASURE_SIDE) -> tuple[int, int]:
    """(H, W) scaled so the longer side is `side` (as the tool: up or down), each at least 1."""
    s = side / max(h, w)
    return max(1, round(h * s)), max(1, round(w * s))


def _level_taps(n: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """NumPy's linear quantile positions q·(n − 1), q = 0, 0.01 … 1, among n sorted values;
    made once per (n, device) outside inference mode (the engine's CUDA graph replays them)."""
    key = (n, torch.device(device))
    if key not in _LEVEL_TAPS:
        with torch.inference_mode(False):
            pos = torch.linspace(0, 1, MEASURE_LEVELS, dtype=torch.float64) * (n - 1)
            lo = pos.floor().long().clamp(0, n - 1)
            hi = (lo + 1).clamp(max=n - 1)
            _LEVEL_TAPS[key] = (lo.to(device), hi.to(device), (pos - lo).float().to(device))
    return _LEVEL_TAPS[key]


def measure_quantiles(image: torch.Tensor) -> torch.Tensor:
    """image (B, 3, H, W) 0–255 → (B, 32, 101) float32: its colours' quantiles along the tool's
    directions, after the shrink to 256 px."""
    small = F.interpolate(image.float(), size=measure_size(*image.shape[-2:]), mode="bilinear",
                          align_corners=False, antialias=True)
    proj = directions(image.device).t() @ small.flatten(2)                    # (B, 32, N)
    ordered = proj.sort(dim=-1).values
    lo, hi, frac = _level_taps(ordered.shape[-1], image.device)
    return torch.lerp(ordered[..., lo], ordered[..., hi], frac)


def palette_distance(image: torch.Tensor, painting_quantiles: torch.Tensor) -> torch.Tensor:
    """(B,) the palette distance of image (B, 3, H, W) to the painting whose `measure_quantiles`
    are given ((B, 32, 101) or (1, 32, 101))."""
    return (measure_quantiles(image) - painting_quantiles).abs().mean((1, 2))


def adaptive_share(d0: torch.Tensor, d1: torch.Tensor, base: float, target: float, cap: float) -> torch.Tensor:
    """(B,) the share of the transport that brings the distance from d0 (none) toward d1 (all) to
    `target` on the straight line between them, within [base, max(base, cap)]."""
    gain = d0 - d1
    wanted = (d0 - target) / gain.clamp_min(1e-6)
    wanted = torch.where(gain > 1e-6, wanted, torch.zeros_like(wanted))
    return wanted.clamp(base, max(base, cap))
