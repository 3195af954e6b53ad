"""The lattice measure and penalty (`training/grid_loss.py`) and the lattice filter (`engine/degrid.py`):
the score against a NumPy transcription of the shared tool's rule, the penalty's gradient removing
a lattice, and the filter removing one while leaving a lattice-free image nearly untouched."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from styleforge.engine.degrid import degrid
from styleforge.training.grid import grid_score_array  # style_metrics' grid_score, transcribed: the oracle
from styleforge.training.grid_loss import grid_penalty, grid_score, grid_score_rgb


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


@pytest.mark.parametrize("with_lattice", [False, True], ids=["clean", "lattice"])
def test_grid_score_matches_the_tool(with_lattice):
    x = textured(100, 90)        # not multiples of 16: both crop to 96 × 80
    if with_lattice:
        x = (x + lattice(100, 90)).clamp(0, 255)
    rgb = x[0].permute(1, 2, 0).round().to(torch.uint8).numpy()
    gray = np.round(rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114]))
    assert grid_score_rgb(rgb) == pytest.approx(grid_score_array(gray), rel=1e-9)
    score = float(grid_score(x)[0])
    assert (score > 100) if with_lattice else (score < 10)


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
