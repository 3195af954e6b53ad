"""Losses of the arbitrary-style model (AdaAttN, Liu et al. 2021; identity terms of SANet, Park &
Lee 2019). All features come from the model's own frozen encoder (VGG16, relu1_1…relu5_1).

content:  Σ_{relu4_1, relu5_1} MSE(norm(φ(out)), norm(φ(photo)))  — norm = per-channel
          mean/std normalisation, so the photo's structure is asked for, not its colours.
style:    Σ_{relu1_1…relu5_1} MSE(μ(φ(out)), μ(φ(painting))) + MSE(σ(φ(out)), σ(φ(painting)))
          (Huang & Belongie 2017's global statistics loss).
gram:     Σ_{relu1_1…relu4_1} ||G(φ(out)) − G(φ(painting))||² (Gatys et al. 2016; G = FFᵀ/(C·H·W)):
          the channel correlations the mean/std term misses, and what the quality bar scores.
local:    Σ_{relu3_1…relu5_1} MSE(φ(out), AdaAttN*(photo, painting)): the parameter-free
          AdaAttN target (attention from the normalised features of every level up to this one,
          no scaling, values = the painting's features) — AdaAttN's "local feature loss", which
          asks each position for the statistics of the painting regions that match it.
identity: MSE((I_cc − I_c)/255) + MSE((I_ss − I_s)/255) (pixel) and Σ_l MSE(φ_l(I_cc), φ_l(I_c))
          + the same for the painting (features): stylizing a photo with itself gives it back.
colour:   sliced Wasserstein distance between the RGB colours of the output and of the painting
          (0–255 units, `models/arbitrary/palette.py`): the palette itself, which the feature
          statistics above let drift to a brown-grey wash (docs/arbitrary.md).
grid:     `grid.grid_penalty` of the output: a pattern locked to the 2/4-px lattice, which
          the shallow style statistics reward and nothing else forbids.
Every term is computed in fp32 with autocast off and returned unweighted. Not the trainer.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..models.arbitrary.encoder import LEVELS
from ..models.arbitrary.palette import sliced_wasserstein
from ..models.arbitrary.transfer import mean_std, subsample_grid, wide
from .grid import grid_penalty

Feats = dict[str, torch.Tensor]
CONTENT_LEVELS = ("relu4_1", "relu5_1")
STYLE_LEVELS = LEVELS
LOCAL_LEVELS = ("relu3_1", "relu4_1", "relu5_1")
GRAM_LEVELS = ("relu1_1", "relu2_1", "relu3_1", "relu4_1")


class ArbitraryLossTerms(NamedTuple):
    content: torch.Tensor
    style: torch.Tensor
    gram: torch.Tensor
    local: torch.Tensor
    identity_pixel: torch.Tensor
    identity_feature: torch.Tensor
    colour: torch.Tensor
    grid: torch.Tensor


def _norm(x: torch.Tensor) -> torch.Tensor:
    mean, std = mean_std(x)
    return (wide(x) - mean) / std


def content_loss(out: Feats, photo: Feats, levels=CONTENT_LEVELS) -> torch.Tensor:
    return sum(F.mse_loss(_norm(out[level]), _norm(photo[level])) for level in levels)


def style_loss(out: Feats, painting: Feats, levels=STYLE_LEVELS) -> torch.Tensor:
    total = 0.0
    for level in levels:
        mo, so = mean_std(out[level])
        mp, sp = mean_std(painting[level])
        total = total + F.mse_loss(mo, mp) + F.mse_loss(so, sp)
    return total


def gram_matrix(x: torch.Tensor) -> torch.Tensor:
    """(B, C, H, W) → (B, C, C) in fp32, normalised by C·H·W."""
    b, c, h, w = x.shape
    f = wide(x).reshape(b, c, h * w)
    return f @ f.transpose(1, 2) / (c * h * w)


def gram_loss(out: Feats, painting: Feats, levels=GRAM_LEVELS) -> torch.Tensor:
    """Σ over levels of the squared Gram difference summed over (C, C), averaged over the batch."""
    return sum((gram_matrix(out[level]) - gram_matrix(painting[level])).square().sum((1, 2)).mean()
               for level in levels)


def _stacked_keys(feats: Feats, level: str) -> torch.Tensor:
    """norm(F_k) for every level k up to `level`, resized to its size, concatenated: (B, ΣC, H, W)."""
    size = feats[level].shape[-2:]
    parts = [_norm(F.adaptive_avg_pool2d(wide(feats[k]), size) if feats[k].shape[-2:] != size
                   else feats[k]) for k in LEVELS[:LEVELS.index(level) + 1]]
    return torch.cat(parts, dim=1)


@torch.no_grad()
def local_targets(photo: Feats, painting: Feats, levels=LOCAL_LEVELS,
                  max_style_tokens: int = 1024) -> dict[str, torch.Tensor]:
    """AdaAttN*(photo, painting) per level, (B, C, H, W) fp32, no gradient."""
    targets = {}
    with torch.autocast(photo[levels[0]].device.type, enabled=False):
        for level in levels:
            fc, fs = wide(photo[level]), wide(painting[level])
            b, c, h, w = fc.shape
            q = _stacked_keys(photo, level).flatten(2).transpose(1, 2)                  # (B, Nc, K)
            k = subsample_grid(_stacked_keys(painting, level), max_style_tokens).flatten(2).transpose(1, 2)
            v = subsample_grid(fs, max_style_tokens)
            mu, sigma = mean_std(v)                   # standardised values: no cancellation
            v = ((v - mu) / sigma).flatten(2).transpose(1, 2)                           # (B, Ns, C)
            out = F.scaled_dot_product_attention(q[:, None], k[:, None], torch.cat([v, v * v], -1)[:, None],
                                                 scale=1.0)[:, 0]                      # (B, Nc, 2C)
            m, e2 = out[..., :c], out[..., c:]
            s = (e2 - m * m).clamp_min(0).add(1e-5).sqrt()
            mean = mu.view(b, 1, c) + sigma.view(b, 1, c) * m
            std = sigma.view(b, 1, c) * s
            target = std * _norm(fc).flatten(2).transpose(1, 2) + mean
            targets[level] = target.transpose(1, 2).reshape(b, c, h, w)
    return targets


def local_loss(out: Feats, targets: dict[str, torch.Tensor]) -> torch.Tensor:
    return sum(F.mse_loss(out[level].float(), target) for level, target in targets.items())


def identity_pixel_loss(reconstructed: torch.Tensor, original: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(reconstructed.float() / 255.0, original.float() / 255.0)


def identity_feature_loss(out: Feats, original: Feats, levels=STYLE_LEVELS) -> torch.Tensor:
    return sum(F.mse_loss(out[level].float(), original[level].float()) for level in levels)


def colour_loss(out: torch.Tensor, painting: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of the SW distance between the pixel colours, (B, 3, H, W) 0–255."""
    return sliced_wasserstein(out.float(), painting.float()).mean()


def grid_loss(out: torch.Tensor) -> torch.Tensor:
    return grid_penalty(out.float())
