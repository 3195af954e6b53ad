"""Stroke scale: stylize at a lower internal resolution, then restore the photo's fine detail.

The networks were trained on 256-px crops, so their brush strokes have a fixed size in pixels
and shrink, relative to the picture, as the image grows: a 4K output looks like the photo with
fine texture. With stroke scale s the network sees the image downscaled by s (antialiased); its
output is sharpened so that the upsampling's blur cancels (`precompensate`), upsampled back
(bicubic: bilinear blurs the strokes and measurably weakens the style, docs/tiling.md), and the
content's high-frequency luminance, the part the downscale removed (Y − up(down(Y)), BT.601
luma), is added to all three channels, so edges and fine detail come back sharp while colours
and strokes are the style's at the internal size.
`auto` draws strokes as the network does on a `REFERENCE_SIDE` image, at any size
(docs/tiling.md measures the style ratio this keeps). The upsampling runs in row bands into one
output tensor, so a 50 MP image needs no full-size temporaries beyond its output (on a GPU,
frames whose temporaries fit `WHOLE_FRAME_BYTES` run whole: far fewer kernel launches). This module
does not run the network; `engine.pipeline` does.
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ..kernels.arbitrary_glue import detail_upscale, detail_upscale_runs_kernel
from ..kernels.reference.arbitrary_glue import LUMA  # BT.601, as detail_upscale weighs it

REFERENCE_SIDE = 512   # auto: the longer side the network sees (its look at 512 px)
BAND_ROWS = 256
# A band's (N, 3, rows, W) float32 tensors stay about this size, so the dozen temporaries of a
# band take tens of MB at any width (memory budgets count them: `engine.memory`).
BAND_TENSOR_BYTES = 4 << 20
WHOLE_FRAME_BYTES = 1 << 30   # on a GPU, temporaries up to this run as whole frames (few launches)


def stroke_factor(height: int, width: int, stroke_scale: float | None) -> float:
    """The downscale factor for the network's input; 1 = native strokes."""
    if stroke_scale is None:
        return max(1.0, max(height, width) / REFERENCE_SIDE)
    return max(1.0, float(stroke_scale))


def internal_size(height: int, width: int, stroke_scale: float | None) -> tuple[int, int]:
    factor = stroke_factor(height, width, stroke_scale)
    return max(1, round(height / factor)), max(1, round(width / factor))


def downscale(image: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Antialiased bilinear resize of float (N, 3, H, W); the network's internal input."""
    return F.interpolate(image.float(), size=size, mode="bilinear", antialias=True, align_corners=False)


def luma(image: torch.Tensor) -> torch.Tensor:
    r, g, b = image[:, 0:1].float(), image[:, 1:2].float(), image[:, 2:3].float()
    return r * LUMA[0] + g * LUMA[1] + b * LUMA[2]


_CUBIC_A = -0.75   # PyTorch's (and OpenCV's) bicubic kernel


def _cubic(x: torch.Tensor) -> torch.Tensor:
    x = x.abs()
    near = ((_CUBIC_A + 2) * x - (_CUBIC_A + 3)) * x * x + 1
    far = ((_CUBIC_A * x - 5 * _CUBIC_A) * x + 8 * _CUBIC_A) * x - 4 * _CUBIC_A
    return torch.where(x <= 1, near, torch.where(x < 2, far, torch.zeros_like(x)))


def _upsample_rows(wide: torch.Tensor, height: int, r0: int, r1: int) -> torch.Tensor:
    """Rows r0..r1 of `wide` (N, C, h, W) bicubically resized to `height` rows, exactly as
    `F.interpolate(mode="bicubic", align_corners=False)` computes them (borders clamped)."""
    small_height = wide.shape[2]
    y = (torch.arange(r0, r1, device=wide.device, dtype=torch.float64) + 0.5) * (small_height / height) - 0.5
    base = y.floor()
    out = None
    for tap in range(-1, 3):
        weight = _cubic(y - (base + tap)).float().view(1, 1, -1, 1)
        rows = wide[:, :, (base.long() + tap).clamp(0, small_height - 1)] * weight
        out = rows if out is None else out.add_(rows)
    return out


PRECOMPENSATE_STEPS = 4
PRECOMPENSATE_FACTOR = 2.0              # the round trip is modelled at ≤ 2× the small size
PRECOMPENSATE_MAX_PIXELS = 16_000_000   # bigger models (huge explicit stroke scales) are skipped


def round_trip(small: torch.Tensor, factor: float) -> torch.Tensor:
    """Bicubic up by `factor`, then antialiased bicubic down: the blur a viewer (or the metric)
    applies to an upsampled result looked at at its internal size."""
    h, w = small.shape[-2:]
    mid = F.interpolate(small, size=(round(h * factor), round(w * factor)), mode="bicubic", align_corners=False)
    return F.interpolate(mid, size=(h, w), mode="bicubic", antialias=True, align_corners=False)


def precompensate(small_out: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """The small stylized image sharpened so that, upsampled to `size` and seen downscaled again,
    it looks like `small_out` itself: Van Cittert iterations p ← p + (s − B p), B the up-down
    round trip (Irani & Peleg's back-projection, done at the small size). Plain bicubic
    upsampling loses the fine strokes on that round trip, and texture-heavy styles' Gram statistics
    show it most (docs/tiling.md). float32, unclamped."""
    s = small_out.float()
    h, w = s.shape[-2:]
    factor = min(PRECOMPENSATE_FACTOR, size[0] / h, size[1] / w)
    if factor <= 1.0 or s.shape[0] * h * w * factor * factor > PRECOMPENSATE_MAX_PIXELS:
        return s
    if s.is_cuda:
        return precompensate_by_matrices(s, factor)
    p = s.clone()
    for _ in range(PRECOMPENSATE_STEPS):
        p += s - round_trip(p, factor)
    return p


@functools.lru_cache(maxsize=16)
def round_trip_matrix(size: int, factor: float, device: torch.device) -> torch.Tensor:
    """`round_trip` along one axis of `size` samples as a (size × size) fp32 matrix R, made by the
    same ops from the unit vectors (in fp64): both resizes are separable, so round_trip(p) =
    R_h · p · R_wᵀ. Cached per (size, factor, device)."""
    # Unit vectors along H, constant along a dummy W of 4 (a round trip keeps a constant; a
    # dummy axis of 1 does not survive the antialiased resize).
    eye = torch.eye(size, dtype=torch.float64, device=device).view(size, 1, size, 1).expand(-1, -1, -1, 4)
    return round_trip(eye.contiguous(), factor)[:, 0, :, 0].t().float().contiguous()


def precompensate_by_matrices(s: torch.Tensor, factor: float) -> torch.Tensor:
    """`precompensate`'s iterations with the round trip as two small matmuls per step: on a GPU
    the bicubic resize kernels are launch- and gather-bound at this size, the matmuls are not.
    Same values to fp32 rounding (tests/engine/test_stroke_scale.py)."""
    h, w = s.shape[-2:]
    rh = round_trip_matrix(h, factor, s.device)
    rw_t = round_trip_matrix(w, factor, s.device).t()
    p = s.clone()
    for _ in range(PRECOMPENSATE_STEPS):
        p = p + s - torch.matmul(rh, p) @ rw_t
    return p


def upscale_styled(content: torch.Tensor, small_content: torch.Tensor, small_out: torch.Tensor) -> torch.Tensor:
    """The network's output on `small_content` brought to content's size: precompensated where
    it ran (the device), then `restore_detail`. The one way back from the internal size."""
    return restore_detail(content, small_content, precompensate(small_out, tuple(content.shape[-2:])))


def restore_detail(content: torch.Tensor, small_content: torch.Tensor, small_out: torch.Tensor,
                   band_rows: int = BAND_ROWS) -> torch.Tensor:
    """Upsample `small_out` (bicubic) to content's size and add the content's lost luminance detail.

    content: float (N, 3, H, W) in 0–255; small_content: the network's input (its downscale);
    small_out: the stylized small image, same size as small_content. Returns float32
    (N, 3, H, W) in 0–255 on content's device.
    """
    n, _, height, width = content.shape
    small_height = small_out.shape[2]
    device = content.device
    if detail_upscale_runs_kernel(content):
        # One kernel, no full-size temporaries: bicubic(out − luma(small)) + luma(content), clamped
        # (bicubic is linear, so this is up(out) + luma(content) − up(luma(small))).
        diff = small_out.float().to(device) - luma(small_content).to(device)
        return detail_upscale(content.float().contiguous(), diff.contiguous())
    if device.type == "cuda" and 4 * 8 * n * height * width <= WHOLE_FRAME_BYTES:
        # A handful of whole-frame kernels instead of ~30 launches a band: the same values.
        size = (height, width)
        up = F.interpolate(small_out.float().to(device), size=size, mode="bicubic", align_corners=False)
        lost = F.interpolate(luma(small_content).to(device), size=size, mode="bicubic", align_corners=False)
        return up.add_(luma(content).sub_(lost)).clamp_(0, 255)
    # Upsample along W first, at the small height (cheap), then along H band by band.
    wide_out = F.interpolate(small_out.float().to(device), size=(small_height, width), mode="bicubic",
                             align_corners=False)
    wide_luma = F.interpolate(luma(small_content).to(device), size=(small_height, width), mode="bicubic",
                              align_corners=False)
    out = torch.empty((n, 3, height, width), dtype=torch.float32, device=device)
    band_rows = max(8, min(band_rows, BAND_TENSOR_BYTES // (n * 3 * 4 * width)))
    for r0 in range(0, height, band_rows):
        r1 = min(height, r0 + band_rows)
        up = _upsample_rows(wide_out, height, r0, r1)
        detail = luma(content[:, :, r0:r1]) - _upsample_rows(wide_luma, height, r0, r1)
        out[:, :, r0:r1] = (up + detail).clamp_(0, 255)
    return out
