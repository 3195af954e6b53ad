"""Flat-region augmentation: training crops with a flat region beside texture.

udnie's green blotches are the network's answer to a region much flatter than the rest of the
image (instance norm sees only "flatter than the average"; docs/training.md "The blotches"). The
256² training crops rarely hold such a region, so no loss ever sees the green. `flatten_patches`
replaces a random rectangle of a share of the crops by a heavy blur of itself (area-downsampled
by `FACTOR` and bilinearly brought back: its texture gone, its colours kept), before the crop is
both the network's input and the content target. Not an image-quality filter; training only.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

FACTOR = 16             # the blur: 1/16 resolution, so a 256² crop's patch keeps only its colour field
SIDE = (0.25, 0.5)      # the rectangle's sides, as shares of the crop's


def flatten_patches(x: torch.Tensor, share: float, generator: torch.Generator) -> torch.Tensor:
    """x (B, 3, H, W) float, 0–255 → a copy where each image, with probability `share`, has one
    rectangle (sides SIDE of H and W, placed at random) replaced by its blurred self. The draws come
    from `generator` (on x's device), so a run seeded by (seed, step) repeats on resume."""
    if share <= 0:
        return x
    b, _, h, w = x.shape
    device = generator.device
    pick = torch.rand(b, generator=generator, device=device) < share
    sizes = torch.rand(b, 2, generator=generator, device=device) * (SIDE[1] - SIDE[0]) + SIDE[0]
    corners = torch.rand(b, 2, generator=generator, device=device)
    if not bool(pick.any()):
        return x
    low = F.adaptive_avg_pool2d(x, (max(1, h // FACTOR), max(1, w // FACTOR)))
    smooth = F.interpolate(low, size=(h, w), mode="bilinear", align_corners=False)
    ph, pw = (sizes[:, 0] * h).long().clamp(min=1), (sizes[:, 1] * w).long().clamp(min=1)
    top, left = (corners[:, 0] * (h - ph + 1)).long(), (corners[:, 1] * (w - pw + 1)).long()
    rows = torch.arange(h, device=device).view(1, h, 1)
    cols = torch.arange(w, device=device).view(1, 1, w)
    inside = ((rows >= top.view(b, 1, 1)) & (rows < (top + ph).view(b, 1, 1))
              & (cols >= left.view(b, 1, 1)) & (cols < (left + pw).view(b, 1, 1)) & pick.view(b, 1, 1))
    return torch.where(inside.unsqueeze(1).to(x.device), smooth, x)
