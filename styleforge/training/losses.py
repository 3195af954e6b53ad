"""Perceptual losses of Johnson et al. (2016), "Perceptual Losses for Real-Time Style Transfer".

content: MSE between VGG16 relu2_2 activations of the output and of the photo.
style:   Σ over relu1_2, relu2_2, relu3_3, relu4_3 of the MSE between the output's Gram matrices
         and the painting's, each Gram divided by C·H·W (Gatys et al. 2016; pytorch/examples'
         normalisation, so its loss weights carry over). With reduction "frobenius" each layer's
         squared differences are summed (Johnson et al.'s squared Frobenius norm) and divided by
         the first style layer's C² (64² with VGG16), not the layer's own: relu1_2's term is the
         mean's, and a layer of C channels weighs (C / 64)² times its mean (×1, ×4, ×16, ×64).
         Up to that constant this is the sum `shared/tools/style_metrics.py`'s style ratio uses.
         `layer_weights` scale each layer's term (default all 1: the sum above unchanged), e.g. to
         quieten relu4_3, whose Grams reward a painting's large motifs (candy's discs).
         With `jpeg_style` = m > 0 the term is (1 − m)·style(output) + m·style(jpeg_proxy(output)):
         texture the CLI's JPEG files lose (`jpeg.py`) earns only the first share.
tv:      total variation of the output scaled to [0, 1] (mean squared neighbour difference).
grid:    the output's fixed 4-px lattice beyond the photo's (`grid.grid_loss`): the network's
         stride-4 layout makes one, and the terms above barely see it (docs/training.md).
stability: output of a perturbed photo vs the perturbed output, f(T(x) + n) ≈ T(f(x)), with T a
         small random shift and zoom (a camera's motion between frames) and n Gaussian noise;
         mean squared difference in [0, 1] over the pixels T keeps inside the frame.
distill: mean squared difference in [0, 1] between the output and a frozen teacher network's
         output on the same photos (Hinton et al. 2015's knowledge distillation, on the image):
         how a slim network learns what the full one draws, beside the perceptual terms. Gupta et al.
         2017 ("Characterizing and Improving Stability in Neural Style Transfer") use the noise,
         Huang et al. 2017 ("Real-Time Neural Style Transfer for Videos") the warp.
The VGG may run in bf16; Gram matrices and every loss are computed in fp32 with autocast off,
because a bf16 Gram over 65k pixels loses most of its mantissa. Terms come back unweighted:
the caller applies the weights, so one compiled graph serves every style's weights.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..models.vgg import VGG16Features, VGGFeatures
from .config import DEFAULT_LAYER_WEIGHTS, STYLE_REDUCTIONS, check_layer_weights
from .grid import grid_loss
from .jpeg import jpeg_proxy

STYLE_LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")
CONTENT_LAYER = "relu2_2"


class LossTerms(NamedTuple):
    content: torch.Tensor
    style: torch.Tensor
    tv: torch.Tensor
    stability: torch.Tensor
    grid: torch.Tensor
    distill: torch.Tensor


class Perturbation(NamedTuple):
    """A batch's stability perturbation: affine sampling matrices and additive noise."""
    theta: torch.Tensor      # (B, 2, 3) for F.affine_grid, in normalised coordinates
    noise: torch.Tensor      # (B, 3, H, W), 0–255 units


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


def check_reduction(reduction: str) -> None:
    if reduction not in STYLE_REDUCTIONS:
        raise ValueError(f"style reduction must be one of {STYLE_REDUCTIONS}, got {reduction!r}")


def style_loss(feats: VGGFeatures, targets: tuple[torch.Tensor, ...], reduction: str = "mean",
               layer_weights: tuple[float, ...] = DEFAULT_LAYER_WEIGHTS) -> torch.Tensor:
    """The batch's style term from its VGG features and the painting's (1, C, C) Grams, fp32.

    "mean": Σ_l w_l · mean over (N, C, C) of (G_l − T_l)², pytorch/examples' loss (all w_l = 1)
    kept bit for bit. "frobenius": Σ_l w_l · Σ over (C, C) of (G_l − T_l)², averaged over the
    batch, ÷ C_1² of the first layer, so a deep layer counts by its number of Gram entries rather
    than as one equal share. `layer_weights`: w_l per STYLE_LAYERS entry; a weight of 0 skips the
    layer's Gram entirely.
    """
    check_reduction(reduction)
    layer_weights = check_layer_weights(layer_weights)
    first = targets[0].shape[-1] ** 2
    total = torch.zeros((), device=targets[0].device)
    for name, target, weight in zip(STYLE_LAYERS, targets, layer_weights):
        if weight == 0:
            continue
        g = gram(getattr(feats, name))                          # (N, C, C)
        t = target.expand(len(g), -1, -1)
        term = (F.mse_loss(g, t) if reduction == "mean"
                else F.mse_loss(g, t, reduction="sum") / (len(g) * first))
        total = total + (term if weight == 1 else weight * term)   # 1: today's graph, unchanged
    return total


def total_variation(image: torch.Tensor) -> torch.Tensor:
    y = image.float() / 255.0
    return (F.mse_loss(y[..., 1:, :], y[..., :-1, :]) + F.mse_loss(y[..., :, 1:], y[..., :, :-1]))


def random_perturbation(batch: int, height: int, width: int, generator: torch.Generator,
                        max_shift: float = 2.0, max_zoom: float = 0.02, noise_std: float = 4.0,
                        max_rotate: float = 0.0) -> Perturbation:
    """Per image: a shift of up to `max_shift` px per axis, a zoom of up to ±`max_zoom`, a rotation
    of up to ±`max_rotate` degrees about the centre, and Gaussian noise of `noise_std` (0–255
    units); drawn from `generator` on its device. The angle is drawn last and only when asked
    for, so runs without rotation draw what they always drew."""
    device = generator.device
    uniform = torch.rand(batch, 3, generator=generator, device=device) * 2 - 1
    scale = 1 + max_zoom * uniform[:, 0]
    theta = torch.zeros(batch, 2, 3, device=device)
    theta[:, 0, 0] = scale
    theta[:, 1, 1] = scale
    # affine_grid's coordinates span 2 over the side (align_corners=False): 1 px = 2 / side.
    theta[:, 0, 2] = max_shift * uniform[:, 1] * 2 / width
    theta[:, 1, 2] = max_shift * uniform[:, 2] * 2 / height
    noise = torch.randn(batch, 3, height, width, generator=generator, device=device) * noise_std
    if max_rotate > 0:
        # In pixels, not affine_grid's [-1, 1] units (they stretch a turn on a non-square crop).
        angle = torch.deg2rad((torch.rand(batch, generator=generator, device=device) * 2 - 1) * max_rotate)
        cos, sin = torch.cos(angle), torch.sin(angle)
        theta[:, 0, 0] = scale * cos
        theta[:, 0, 1] = -scale * sin * height / width
        theta[:, 1, 0] = scale * sin * width / height
        theta[:, 1, 1] = scale * cos
    return Perturbation(theta, noise)


def transform(images: torch.Tensor, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Bilinear resampling by `theta` → (images, (B, 1, H, W) mask of pixels sampled inside)."""
    grid = F.affine_grid(theta.to(images.dtype), list(images.shape), align_corners=False)
    out = F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)
    # A sample inside the outermost pixel centres has all four bilinear neighbours in the image.
    limit = 1 - 1 / torch.tensor(images.shape[-1:-3:-1], device=grid.device, dtype=grid.dtype)
    mask = (grid.abs() <= limit).all(-1, keepdim=True).permute(0, 3, 1, 2)
    return out, mask


def stability_loss(model: torch.nn.Module, content: torch.Tensor, stylized: torch.Tensor,
                   perturbation: Perturbation) -> torch.Tensor:
    """mean over kept pixels of (f(T(x) + n) − T(f(x)))², in [0, 1] units. Both branches get
    gradients, as in Gupta et al.: the network may move either output toward the other."""
    moved, mask = transform(content, perturbation.theta)
    perturbed_out = model((moved + perturbation.noise.to(moved.dtype)).clamp(0, 255))
    moved_out, _ = transform(stylized, perturbation.theta)
    with torch.autocast(content.device.type, enabled=False):
        diff = (perturbed_out.float() - moved_out.float()) / 255.0
        keep = mask.to(diff.dtype)
        return (diff.pow(2) * keep).sum() / (keep.sum() * diff.shape[1]).clamp_min(1.0)


def loss_terms(model: torch.nn.Module, vgg: VGG16Features, content: torch.Tensor,
               targets: tuple[torch.Tensor, ...], with_tv: bool,
               perturbation: Perturbation | None = None, *, with_grid: bool = False,
               teacher: torch.nn.Module | None = None, style_reduction: str = "mean",
               style_layer_weights: tuple[float, ...] = DEFAULT_LAYER_WEIGHTS, jpeg_style: float = 0.0,
               jpeg_quality: int = 95) -> LossTerms:
    """One forward pass: photos (B, 3, S, S) float 0–255 → stylized → the six unweighted terms.

    Runs under the caller's autocast. The photo's features are needed only up to relu2_2 and
    carry no gradient. `perturbation` (None: the stability term is 0 and costs nothing) adds a
    second pass of the style network on the perturbed photos; `teacher` (None: the distill term
    is 0) one pass of the frozen teacher, without gradients. `style_reduction` and
    `style_layer_weights`: see `style_loss`. `jpeg_style` > 0 runs VGG once more, on
    `jpeg_proxy(stylized, jpeg_quality)`, and gives that image's style loss this share of the term.
    """
    stylized = model(content)
    with torch.no_grad():
        photo_feats: VGGFeatures = vgg(content.to(next(vgg.parameters()).dtype), last=CONTENT_LAYER)
    out_feats = vgg(stylized.to(next(vgg.parameters()).dtype))
    jpeg_feats = (vgg(jpeg_proxy(stylized, jpeg_quality).to(next(vgg.parameters()).dtype)) if jpeg_style > 0
                  else None)
    with torch.autocast(content.device.type, enabled=False):
        content_loss = F.mse_loss(getattr(out_feats, CONTENT_LAYER).float(),
                                  getattr(photo_feats, CONTENT_LAYER).float())
        style = style_loss(out_feats, targets, style_reduction, style_layer_weights)
        if jpeg_feats is not None:
            style = ((1 - jpeg_style) * style
                     + jpeg_style * style_loss(jpeg_feats, targets, style_reduction, style_layer_weights))
        tv = total_variation(stylized) if with_tv else torch.zeros((), device=content.device)
        grid = grid_loss(stylized, content) if with_grid else torch.zeros((), device=content.device)
    stability = (stability_loss(model, content, stylized, perturbation) if perturbation is not None
                 else torch.zeros((), device=content.device))
    distill = torch.zeros((), device=content.device)
    if teacher is not None:
        with torch.no_grad():
            drawn = teacher(content)
        with torch.autocast(content.device.type, enabled=False):
            distill = F.mse_loss(stylized.float() / 255.0, drawn.float().clamp(0, 255) / 255.0)
    return LossTerms(content_loss, style, tv, stability, grid, distill)


def style_distance(vgg: VGG16Features, image: torch.Tensor, targets: tuple[torch.Tensor, ...],
                   reduction: str = "mean") -> torch.Tensor:
    """Per-image style loss Σ_l mean((G_l(image) − G_l(painting))²), or with "frobenius" the
    sums over C×C divided by the first layer's C² (`style_loss`): (N,) fp32. No gradient needed."""
    check_reduction(reduction)
    feats = vgg(image.to(next(vgg.parameters()).dtype))
    first = targets[0].shape[-1] ** 2
    total = torch.zeros(len(image), device=image.device)
    for name, target in zip(STYLE_LAYERS, targets):
        squared = (gram(getattr(feats, name)) - target).pow(2)
        total = total + (squared.mean(dim=(1, 2)) if reduction == "mean" else squared.sum(dim=(1, 2)) / first)
    return total
