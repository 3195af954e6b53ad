"""The grid penalty (training/grid.py): what it measures, that it sees a lattice a photo lacks,
and that its gradient removes one."""
import numpy as np
import torch

from styleforge.training.grid import grid_loss, grid_score_array, phase_variance


def smooth_image(seed: int, size: int = 64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    small = torch.rand(1, 3, size // 8, size // 8, generator=gen) * 255
    return torch.nn.functional.interpolate(small, size=(size, size), mode="bicubic").clamp(0, 255)


def lattice(size: int, amplitude: float) -> torch.Tensor:
    cell = torch.tensor([1.0, 1.0, -1.0, -1.0]).repeat(size // 4)
    return (amplitude * (cell[None, :] + cell[:, None]) / 2).expand(1, 3, size, size)


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
    with_grid = photo + lattice(64, 6.0)
    assert float(grid_loss(with_grid, photo)) > 1e-4           # 6 grey levels: (6/255)² / 2 ≈ 2.8e-4
    # The photo's own lattice is allowed (up to cross terms in a few windows).
    assert float(grid_loss(photo, with_grid)) < 0.1 * float(grid_loss(with_grid, photo))
    assert float(grid_loss(with_grid, with_grid)) == 0.0


def test_gradient_steps_remove_the_lattice():
    photo = smooth_image(1)
    out = (photo + lattice(64, 8.0)).requires_grad_(True)
    opt = torch.optim.Adam([out], lr=0.5)
    start = float(grid_loss(out, photo))
    for _ in range(40):
        opt.zero_grad()
        grid_loss(out, photo).backward()
        opt.step()
    assert float(grid_loss(out, photo)) < 0.05 * start
    assert float((out.detach() - photo).abs().mean()) < 2.0     # the picture itself is kept


def test_grid_score_tells_a_lattice_from_a_smooth_image():
    photo = smooth_image(2, 128)[0].mean(0).numpy()
    assert grid_score_array(photo) < 10
    assert grid_score_array(photo + lattice(128, 4.0)[0, 0].numpy()) > 100
    assert np.isfinite(grid_score_array(np.zeros((20, 20)) + np.arange(20)))
