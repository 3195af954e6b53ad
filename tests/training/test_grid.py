"""The lattice measures and penalties (`training/grid.py`) and the lattice filter (`engine/degrid.py`):
the phase variance as the power at the grid lines, TransformerNet's penalty seeing a lattice the
photo lacks, the score against a NumPy transcription of the shared tool's rule, each penalty's
gradient removing a lattice, and the filter removing one while leaving a lattice-free image nearly
untouched."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from styleforge.engine.degrid import degrid
from styleforge.training.grid import (
    grid_loss,
    grid_penalty,
    grid_score,
    grid_score_array,
    grid_score_image,
    grid_score_rgb,
    phase_variance,
)


def tool_score(gray: np.ndarray) -> float:
    """shared/tools/style_metrics.py's grid_score, transcribed in NumPy: the oracle."""
    h, w = gray.shape[0] - gray.shape[0] % 16, gray.shape[1] - gray.shape[1] % 16
    a = gray[:h, :w] - gray[:h, :w].mean()
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


def smooth_image(seed: int, size: int = 64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    small = torch.rand(1, 3, size // 8, size // 8, generator=gen) * 255
    return torch.nn.functional.interpolate(small, size=(size, size), mode="bicubic").clamp(0, 255)


def square_lattice(size: int, amplitude: float) -> torch.Tensor:
    cell = torch.tensor([1.0, 1.0, -1.0, -1.0]).repeat(size // 4)
    return (amplitude * (cell[None, :] + cell[:, None]) / 2).expand(1, 3, size, size)


def textured(h: int = 96, w: int = 80, seed: int = 0) -> torch.Tensor:
    """A lattice-free test image: smoothed noise at several scales plus a gradient, 0–255."""
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros(1, 3, h, w)
    for scale in (2, 5, 11):
        noise = torch.rand(1, 3, h // scale + 3, w // scale + 3, generator=g)
        x += 40 * F.interpolate(noise, size=(h, w), mode="bicubic", align_corners=False)
    x += torch.linspace(0, 60, w).view(1, 1, 1, w)
    return x.clamp(0, 255)


def lattice(h: int, w: int, amplitude: float = 4.0) -> torch.Tensor:
    """2 light / 2 dark columns and rows, as the arbitrary model's outputs carried."""
    col = torch.tensor([1.0, 1.0, -1.0, -1.0]).repeat(w // 4 + 1)[:w]
    row = torch.tensor([1.0, -1.0, -1.0, 1.0]).repeat(h // 4 + 1)[:h]
    return amplitude * (col.view(1, 1, 1, w) + 0.5 * row.view(1, 1, h, 1)).expand(1, 3, h, w)


def test_phase_variance_is_the_power_at_the_grid_frequencies():
    """Over one window, var of the 16 phase means = Σ |DFT|² at the 15 non-zero multiples of
    (H/4, W/4), divided by (H·W)²: the aliasing identity the penalty rests on."""
    x = torch.randn(1, 1, 32, 32, dtype=torch.float64)
    power = torch.fft.fft2(x[0, 0]).abs().pow(2)
    bins = power[::8, ::8].sum() - power[0, 0]
    got = phase_variance(x, window=32)[0, 0, 0, 0].double()
    assert torch.allclose(got, bins / 32 ** 4, rtol=1e-5)


def test_grid_loss_sees_a_lattice_the_photo_lacks_only():
    photo = smooth_image(0)
    assert float(grid_loss(photo, photo)) == 0.0
    with_grid = photo + square_lattice(64, 6.0)
    assert float(grid_loss(with_grid, photo)) > 1e-4           # 6 grey levels: (6/255)² / 2 ≈ 2.8e-4
    # The photo's own lattice is allowed (up to cross terms in a few windows).
    assert float(grid_loss(photo, with_grid)) < 0.1 * float(grid_loss(with_grid, photo))
    assert float(grid_loss(with_grid, with_grid)) == 0.0


def test_grid_loss_gradient_steps_remove_the_lattice():
    photo = smooth_image(1)
    out = (photo + square_lattice(64, 8.0)).requires_grad_(True)
    opt = torch.optim.Adam([out], lr=0.5)
    start = float(grid_loss(out.detach(), photo))
    for _ in range(40):
        opt.zero_grad()
        grid_loss(out, photo).backward()
        opt.step()
    assert float(grid_loss(out.detach(), photo)) < 0.05 * start
    assert float((out.detach() - photo).abs().mean()) < 2.0     # the picture itself is kept


@pytest.mark.parametrize("with_lattice", [False, True], ids=["clean", "lattice"])
def test_grid_score_matches_the_tool(with_lattice):
    x = textured(100, 90)        # not multiples of 16: both crop to 96 × 80
    if with_lattice:
        x = (x + lattice(100, 90)).clamp(0, 255)
    rgb = x[0].permute(1, 2, 0).round().to(torch.uint8).numpy()
    gray = np.round(rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114]))
    assert grid_score_rgb(rgb) == pytest.approx(tool_score(gray), rel=1e-9)
    score = float(grid_score(x)[0])
    assert (score > 100) if with_lattice else (score < 10)


def test_grid_score_array_and_image_follow_the_tool():
    photo = smooth_image(2, 128)[0].mean(0).numpy()
    lattice_photo = photo + square_lattice(128, 4.0)[0, 0].numpy()
    assert grid_score_array(photo) == pytest.approx(tool_score(photo.astype(np.float64)), rel=1e-9)
    assert grid_score_array(photo) < 10
    assert grid_score_array(lattice_photo) > 100
    ramp = np.zeros((20, 20)) + np.arange(20)
    assert grid_score_array(ramp) == pytest.approx(tool_score(ramp), rel=1e-9)
    from PIL import Image
    pil = Image.fromarray(textured(100, 90)[0].permute(1, 2, 0).round().to(torch.uint8).numpy())
    assert grid_score_image(pil) == pytest.approx(tool_score(np.asarray(pil.convert("L"), np.float64)),
                                                  rel=1e-9)


def test_grid_penalty_gradient_removes_a_lattice():
    clean = textured()
    x = (clean + lattice(96, 80)).requires_grad_(True)
    before = float(grid_score(x.detach())[0])
    opt = torch.optim.Adam([x], lr=0.5)
    for _ in range(40):
        opt.zero_grad()
        grid_penalty(x).backward()
        opt.step()
    after = float(grid_score(x.detach())[0])
    assert before > 100 and after < 10, (before, after)
    # It removed the lattice, not the picture: closer to the clean image than when it started.
    assert (x.detach() - clean).abs().mean() < 0.5 * lattice(96, 80).abs().mean()


def test_degrid_removes_a_lattice_and_keeps_the_rest():
    clean = textured(101, 83)   # odd sizes: padded to the period inside, cropped back
    out = degrid(clean + lattice(101, 83))
    assert out.shape == clean.shape
    assert float(grid_score(out)[0]) < 10
    kept = degrid(clean)
    psnr = 10 * torch.log10(255.0 ** 2 / (kept - clean).square().mean())
    assert psnr > 38, psnr
