"""A fixed pixel lattice in an image: its measure and the two training penalties against it.

A decoder that upsamples by nearest ×2 (or a strided encoder) can stamp the same pattern into
every 2×2 or 4×4 block of its output: a lattice aligned with the pixel grid (docs/training.md,
"The 4-px grid"). TransformerNet is periodic with period 4 (two stride-2 convs down, two nearest
×2 up), so an output pixel's computation depends on its (y mod 4, x mod 4) phase. In the luminance
spectrum a lattice is a sharp peak at a 2- or 4-px period (the bins h/p, w/p), far above the bins
around it; natural photos have none (score ~1.5), a visible lattice scores tens to hundreds.

grid_score   = the largest power, over periods 2 and 4 and the x, y and diagonal directions, of
               the Hann-windowed luminance spectrum at the grid bin over the median of its 7×7
               neighbourhood (the centre left out). Same rule as `shared/tools/style_metrics.py`
               (the yardstick of issue 44), which reads an 8-bit file: `grid_score_rgb` and
               `grid_score_image` round the luma as it does; `grid_score` itself does not.
grid_loss    = TransformerNet's penalty: per 32-px window and colour channel, the variance of the
               16 phase means (up to a constant, the window's spectral power at exactly the
               lattice lines, the spectrum aliased onto a 4×4 grid of bins) beyond the content
               photo's: a photo's own fine texture is not punished, a lattice it lacks is.
grid_penalty = the arbitrary model's penalty: mean over the six bins of max(0, √(peak / median) −
               FLOOR), the median detached: the bin's amplitude over its neighbourhood's, above
               what clean images reach. Its gradient has the same size whatever the lattice's
               strength (a log of the power ratio was tried: its gradient grows as a bin empties,
               so a step that removes a peak makes a new one out of a quiet bin), zero for quiet
               bins, and it is relative (a faint lattice on a flat sky counts as much as a strong
               one on a busy image, as the eye judges).
Images are (B, 3, H, W) in 0–255. Not a colour or style measure.
"""
from __future__ import annotations

import numpy as np
import torch

PERIOD = 4                        # TransformerNet's total stride
WINDOW = 32                       # px: local enough to catch a grid in one region, 64 samples per phase
PERIODS = (2, 4)                  # the lattice periods the spectral measure looks at
FLOOR = 2.0                       # amplitude ratio (power ratio 4) below which a bin is left alone
LUMA = (0.299, 0.587, 0.114)      # ITU-R 601-2, PIL's RGB → "L"


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


def luminance(image: torch.Tensor) -> torch.Tensor:
    """(B, 3, H, W) → (B, H, W), same dtype."""
    w = torch.tensor(LUMA, dtype=image.dtype, device=image.device).view(1, 3, 1, 1)
    return (image * w).sum(1)


def _spectrum(lum: torch.Tensor) -> torch.Tensor:
    """(B, H, W) → power spectrum of the mean-removed, Hann-windowed crop to multiples of 16."""
    h, w = lum.shape[-2] - lum.shape[-2] % 16, lum.shape[-1] - lum.shape[-1] % 16
    if h < 16 or w < 16:
        raise ValueError(f"grid measures need at least 16×16 pixels, got {tuple(lum.shape[-2:])}")
    a = lum[..., :h, :w].double() if lum.dtype == torch.float64 else lum[..., :h, :w].float()
    a = a - a.mean(dim=(-2, -1), keepdim=True)
    # numpy's np.hanning (symmetric), as the tool uses; torch's default window is periodic.
    wy = torch.hann_window(h, periodic=False, dtype=a.dtype, device=a.device)
    wx = torch.hann_window(w, periodic=False, dtype=a.dtype, device=a.device)
    return torch.fft.fft2(a * wy[:, None] * wx[None, :]).abs().square()


def _peaks(power: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, H, W) power → (peaks (B, 6), neighbourhood medians (B, 6))."""
    h, w = power.shape[-2:]
    offsets = torch.arange(-3, 4, device=power.device)
    peaks, medians = [], []
    for per in PERIODS:
        fy, fx = h // per, w // per
        for y, x in ((0, fx), (fy, 0), (fy, fx)):
            ys, xs = (y + offsets) % h, (x + offsets) % w
            block = power[:, ys][:, :, xs].flatten(1)                        # (B, 49)
            around = torch.cat([block[:, :24], block[:, 25:]], dim=1)
            peaks.append(block[:, 24])
            # np.median of 48 values: the mean of the two middle ones.
            mid = around.sort(dim=1).values[:, 23:25].mean(1)
            medians.append(mid)
    return torch.stack(peaks, 1), torch.stack(medians, 1)


@torch.no_grad()
def grid_score(image: torch.Tensor) -> torch.Tensor:
    """(B, 3, H, W) 0–255 (or (B, H, W) luminance) → (B,) the largest peak-to-neighbourhood ratio."""
    lum = luminance(image) if image.dim() == 4 else image
    peaks, medians = _peaks(_spectrum(lum))
    return (peaks / medians.clamp_min(1e-20)).amax(1)


def grid_penalty(image: torch.Tensor) -> torch.Tensor:
    """(B, 3, H, W) 0–255 → scalar: mean over images and bins of max(0, √(peak / median) − FLOOR)."""
    peaks, medians = _peaks(_spectrum(luminance(image)))
    ratio = peaks / medians.detach().clamp_min(1e-12)
    return (ratio.clamp_min(1e-12).sqrt() - FLOOR).clamp_min(0).mean()


def grid_score_array(lum: np.ndarray) -> float:
    """A 2-D luminance array (any real dtype, scored in float64) → the score, for dev tools."""
    return float(grid_score(torch.from_numpy(np.asarray(lum, dtype=np.float64))[None])[0])


def grid_score_rgb(rgb: np.ndarray) -> float:
    """uint8 (H, W, 3) → the score, as the tool computes it from a file (luma rounded to 8 bits)."""
    return grid_score_array(np.round(rgb.astype(np.float64) @ np.array(LUMA)))


def grid_score_image(image) -> float:
    """A PIL image → the score of its "L" conversion, as style_metrics reads a file."""
    return grid_score_array(np.asarray(image.convert("L")))
