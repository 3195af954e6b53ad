"""The fixed 4-px grid: a differentiable training penalty and the score it stands in for.

TransformerNet is periodic with period 4: two stride-2 convs down, two nearest ×2 upsamples up,
so an output pixel's computation depends on its (y mod 4, x mod 4) phase. Any difference between
the 16 phases shows as a fixed lattice whose spectrum has lines at the 2- and 4-px periods, and
the perceptual losses barely see it (docs/training.md, "The 4-px grid"). Over a window the
variance of the 16 phase means is, up to a constant, the summed power of the window's spectrum
at exactly those lines (the phase means are the spectrum aliased onto a 4×4 grid of bins).

`grid_loss` penalises the output's phase variance, per 32-px window and colour channel, where it
exceeds the content photo's: a photo's own fine texture is not punished, a lattice the photo does
not have is. `grid_score_array` is `shared/tools/style_metrics.py`'s grid_score (the yardstick
of issue 44: photos ~1.5–5, a visible grid tens to hundreds), for tests and dev tools.
"""
from __future__ import annotations

import numpy as np
import torch

PERIOD = 4          # the network's total stride
WINDOW = 32         # px: local enough to catch a grid in one region, 64 samples per phase


def phase_variance(images: torch.Tensor, window: int = WINDOW) -> torch.Tensor:
    """(B, C, H, W) → (B, C, H//window, W//window): variance across the 16 phase means of each
    window (the borders beyond a whole window are left out). Same units as `images`, squared."""
    b, c, h, w = images.shape
    window = min(window, h - h % PERIOD, w - w % PERIOD)
    ny, nx = h // window, w // window
    x = images[..., :ny * window, :nx * window].float()
    k = window // PERIOD
    # (B, C, ny, k, 4, nx, k, 4): the last axes of each spatial pair are the phase.
    x = x.reshape(b, c, ny, k, PERIOD, nx, k, PERIOD)
    means = x.mean(dim=(3, 6))                                   # (B, C, ny, 4, nx, 4)
    means = means.permute(0, 1, 2, 4, 3, 5).reshape(b, c, ny, nx, PERIOD * PERIOD)
    return means.var(dim=-1, unbiased=False)


def grid_loss(stylized: torch.Tensor, photo: torch.Tensor, window: int = WINDOW) -> torch.Tensor:
    """mean over windows and channels of relu(phase variance of output − of photo), in [0, 1]²
    units (images in 0–255). fp32 whatever the autocast: the variances are small differences."""
    with torch.autocast(stylized.device.type, enabled=False):
        out = phase_variance(stylized.float() / 255.0, window)
        with torch.no_grad():
            ref = phase_variance(photo.float() / 255.0, window)
        return torch.relu(out - ref).mean()


def grid_score_array(luminance: np.ndarray) -> float:
    """style_metrics.grid_score on a 2-D array: the largest spectral power at a 2- or 4-px period
    (x, y, diagonal) over the median of its 7×7 neighbourhood (Hann-windowed)."""
    a = np.asarray(luminance, dtype=np.float64)
    h, w = a.shape[0] - a.shape[0] % 16, a.shape[1] - a.shape[1] % 16
    a = a[:h, :w] - a[:h, :w].mean()
    power = np.abs(np.fft.fft2(a * np.outer(np.hanning(h), np.hanning(w)))) ** 2
    best = 0.0
    for per in (2, 4):
        fy, fx = h // per, w // per
        for y, x in ((0, fx), (fy, 0), (fy, fx)):
            ys = [(y + d) % h for d in range(-3, 4)]
            xs = [(x + d) % w for d in range(-3, 4)]
            around = np.delete(power[np.ix_(ys, xs)].ravel(), 24)
            best = max(best, power[y, x] / np.median(around))
    return float(best)


def grid_score_image(image) -> float:
    """grid_score of a PIL image, scored on its luminance ("L") as style_metrics does."""
    return grid_score_array(np.asarray(image.convert("L"), dtype=np.float64))
