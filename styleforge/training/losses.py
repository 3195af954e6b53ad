"""Perceptual losses of Johnson et al. (2016), "Perceptual Losses for Real-Time Style Transfer".

content: MSE between VGG16 relu2_2 activations of the output and of the photo.
style:   Σ over relu1_2, relu2_2, relu3_3, relu4_3 of the MSE between the output's Gram matrices
         and the painting's, each Gram divided by C·H·W (Gatys et al. 2016; pytorch/examples'
         normalisation, so its loss weights carry over).
tv:      total variation of the output scaled to [0, 1] (mean squared neighbour difference).
The VGG may run in bf16; Gram matrices and every loss are computed in fp32 with autocast off,
because a bf16 Gram over 65k pixels loses most of its mantissa. Terms come back unweighted:
the caller applies the weights, so one compiled graph serves every style's weights.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..models.vgg import VGG16Features, VGGFeatures

STYLE_LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")
CONTENT_LAYER = "relu2_2"


class LossTerms(NamedTuple):
    content: torch.Tensor
    style: torch.Tensor
    tv: torch.Tensor


def gram(features: torch.Tensor) -> torch.Tensor:
    """(N, C, H, W) → (N, C, C) in fp32, divided by C·H·W."""
    n, c, h, w = features.shape
    with torch.autocast(features.device.type, enabled=False):
        f = features.float()
        if f.is_contiguous(memory_format=torch.channels_last) and not f.is_contiguous():
            rows = f.permute(0, 2, 3, 1).reshape(n, h * w, c)     # a view of NHWC memory: no copy
            return torch.bmm(rows.transpose(1, 2), rows) / (c * h * w)
        flat = f.reshape(n, c, h * w)
        return torch.bmm(flat, flat.transpose(1, 2)) / (c * h * w)


@torch.no_grad()
def style_targets(vgg: VGG16Features, painting: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The painting's Gram matrices, (1, C, C) fp32 per style layer. painting: (1, 3, H, W) 0–255."""
    param = next(vgg.parameters())
    x = painting.to(param.device, param.dtype)
    if param.device.type == "cuda":
        x = x.contiguous(memory_format=torch.channels_last)
    feats = vgg(x)
    return tuple(gram(getattr(feats, name)) for name in STYLE_LAYERS)


def total_variation(image: torch.Tensor) -> torch.Tensor:
    y = image.float() / 255.0
    return (F.mse_loss(y[..., 1:, :], y[..., :-1, :]) + F.mse_loss(y[..., :, 1:], y[..., :, :-1]))


def loss_terms(model: torch.nn.Module, vgg: VGG16Features, content: torch.Tensor,
               targets: tuple[torch.Tensor, ...], with_tv: bool) -> LossTerms:
    """One forward pass: photos (B, 3, S, S) float 0–255 → stylized → the three unweighted terms.

    Runs under the caller's autocast. The photo's features are needed only up to relu2_2 and
    carry no gradient.
    """
    stylized = model(content)
    with torch.no_grad():
        photo_feats: VGGFeatures = vgg(content.to(next(vgg.parameters()).dtype), last=CONTENT_LAYER)
    out_feats = vgg(stylized.to(next(vgg.parameters()).dtype))
    with torch.autocast(content.device.type, enabled=False):
        content_loss = F.mse_loss(getattr(out_feats, CONTENT_LAYER).float(),
                                  getattr(photo_feats, CONTENT_LAYER).float())
        style_loss = sum(F.mse_loss(gram(getattr(out_feats, name)), target.expand(len(content), -1, -1))
                         for name, target in zip(STYLE_LAYERS, targets))
        tv = total_variation(stylized) if with_tv else torch.zeros((), device=content.device)
    return LossTerms(content_loss, style_loss, tv)


def style_distance(vgg: VGG16Features, image: torch.Tensor, targets: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Per-image style loss Σ_l mean((G_l(image) − G_l(painting))²): (N,) fp32. No gradient needed."""
    feats = vgg(image.to(next(vgg.parameters()).dtype))
    total = torch.zeros(len(image), device=image.device)
    for name, target in zip(STYLE_LAYERS, targets):
        total = total + (gram(getattr(feats, name)) - target).pow(2).mean(dim=(1, 2))
    return total
