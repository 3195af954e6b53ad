"""Fast tiled execution with InstanceNorm statistics from a thumbnail (URST's thumbnail norm).

Chen et al. 2022, "Towards Ultra-Resolution Neural Style Transfer via Thumbnail Instance
Normalization" (URST): run the network once on a downscaled copy of the image, keep every
InstanceNorm's per-channel mean and variance, then run independent tiles of the full image with
those statistics frozen. Each tile carries a halo of the network's whole receptive field
(`tiling_plan.receptive_halo`, 54 px, rounded up to the total stride of 4) and starts on a multiple of
4, so a tile's core equals what the whole frame computes *with the same frozen statistics*; the
only error is the thumbnail's statistics themselves (measured in docs/tiling.md). Memory is one
tile's activations, independent of the image size. The tiles run the model's own `forward`
with its `InstanceNorm2d` modules swapped for `FrozenNorm`s; nothing here re-declares the network.
The exact mode is `engine.tiling`.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from ..models.transformer_net import TransformerNet
from .tiling_plan import plan_steps, receptive_halo

STRIDE = 4               # the network's total downsampling: tiles start on multiples of it
THUMBNAIL_SIDE = 1024    # URST uses ~1000-px thumbnails; larger costs more, gains little


class FrozenNorm(nn.Module):
    """InstanceNorm with given per-channel statistics: x · scale + shift."""

    def __init__(self, norm: nn.InstanceNorm2d, mean: torch.Tensor, var: torch.Tensor):
        super().__init__()
        scale = norm.weight.double() / torch.sqrt(var.double() + norm.eps)
        self.register_buffer("scale", scale.float().view(1, -1, 1, 1))
        self.register_buffer("shift", (norm.bias.double() - mean.double() * scale).float().view(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self.shift, x.float(), self.scale).to(x.dtype)


@torch.inference_mode()
def norm_statistics(model: nn.Module, image: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{norm module name: (mean, var)} of every InstanceNorm's input on `image` (1, 3, h, w)."""
    stats, hooks = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.InstanceNorm2d):
            def hook(_module, inputs, name=name):
                var, mean = torch.var_mean(inputs[0].float(), dim=(0, 2, 3), correction=0)
                stats[name] = (mean, var)
            hooks.append(module.register_forward_pre_hook(hook))
    try:
        model(image)
    finally:
        for h in hooks:
            h.remove()
    return stats


def with_frozen_norms(model: nn.Module, stats: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> nn.Module:
    frozen = copy.deepcopy(model)
    for name, (mean, var) in stats.items():
        parent_name, _, child = name.rpartition(".")
        parent = frozen.get_submodule(parent_name) if parent_name else frozen
        setattr(parent, child, FrozenNorm(getattr(parent, child), mean, var).to(mean.device))
    return frozen


def thumbnail_size(height: int, width: int, side: int = THUMBNAIL_SIDE) -> tuple[int, int]:
    """At most `side` on the longer side, multiples of 4, at least 16 (the network's minimum)."""
    scale = min(1.0, side / max(height, width))
    def fit(v):
        return max(16, round(v * scale / STRIDE) * STRIDE)
    return fit(height), fit(width)


def tile_spans(size: int, core: int, halo: int):
    """(read start, read end, core start, core end) along one axis; starts on multiples of 4."""
    for c0 in range(0, size, core):
        c1 = min(size, c0 + core)
        yield max(0, c0 - halo), min(size, c1 + halo), c0, c1


class ThumbnailTiledRunner:
    """Fast mode: frozen thumbnail statistics, independent tiles of `tile` px plus halo.

    Takes float (1, 3, H, W) in 0–255 with H, W multiples of 4 on any device; returns the raw
    output, float32 (1, 3, H, W), on the device the input came from.
    """

    def __init__(self, model: TransformerNet, device: torch.device, dtype: torch.dtype,
                 tile: int = 512, thumbnail_side: int = THUMBNAIL_SIDE):
        self.device, self.dtype = torch.device(device), dtype
        self.model = model.eval().requires_grad_(False).to(self.device, dtype)
        halo = receptive_halo(plan_steps(self.model))
        self.halo = -(-halo // STRIDE) * STRIDE
        self.tile = max(STRIDE, tile // STRIDE * STRIDE)
        self.thumbnail_side = thumbnail_side
        self.tiles_run = 0

    @torch.inference_mode()
    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return torch.cat([self._one(image[i:i + 1]) for i in range(image.shape[0])])

    def _one(self, image: torch.Tensor) -> torch.Tensor:
        height, width = image.shape[-2:]
        size = thumbnail_size(height, width, self.thumbnail_side)
        small = F.interpolate(image.to(self.device, torch.float32), size=size, mode="bilinear",
                              antialias=True, align_corners=False)
        frozen = with_frozen_norms(self.model, norm_statistics(self.model, small.to(self.dtype)))
        out = torch.empty((1, 3, height, width), dtype=torch.float32, device=image.device)
        self.tiles_run = 0
        for y0, y1, cy0, cy1 in tile_spans(height, self.tile, self.halo):
            for x0, x1, cx0, cx1 in tile_spans(width, self.tile, self.halo):
                piece = image[:, :, y0:y1, x0:x1].to(self.device, self.dtype)
                result = frozen(piece)
                out[:, :, cy0:cy1, cx0:cx1] = result[:, :, cy0 - y0:cy1 - y0, cx0 - x0:cx1 - x0].float()
                self.tiles_run += 1
        return out

