"""`degrid_numpy` (the CPU form) against `degrid` (the PyTorch form, the CUDA path's, and a float64
run of the same filter): odd sizes, sizes not divisible by 4, batch 2, block grids smaller than the
window (its replicate borders), images under 8 px (returned as they are), and a 4-px lattice on a
smooth image removed as the PyTorch form removes it."""
from __future__ import annotations

import pytest
import torch

from styleforge.engine.degrid import degrid
from styleforge.engine.degrid_numpy import degrid_numpy


@pytest.mark.parametrize("shape", [(1, 3, 64, 48), (2, 3, 37, 53), (1, 3, 9, 13), (1, 3, 8, 8),
                                   (1, 3, 22, 40), (1, 1, 130, 7), (1, 3, 6, 30)],
                         ids=["multiple-of-4", "batch2-odd", "tiny-odd", "smallest", "blocks-under-window",
                              "one-channel-narrow", "under-8px"])
def test_equals_the_pytorch_form(shape):
    torch.manual_seed(0)
    x = torch.rand(shape) * 255
    got = degrid_numpy(x)
    assert got.dtype == torch.float32 and got.shape == x.shape
    torch.testing.assert_close(got, degrid(x), rtol=0, atol=1e-4)


def test_close_to_a_float64_run_and_removes_a_lattice():
    yy, xx = torch.meshgrid(torch.arange(90.0), torch.arange(70.0), indexing="ij")
    smooth = (128 + 60 * torch.sin(yy / 17) * torch.cos(xx / 23)).expand(1, 3, 90, 70)
    torch.manual_seed(1)
    tile = torch.randn(1, 3, 4, 4)
    lattice = 6 * (tile - tile.mean((2, 3), keepdim=True)).repeat(1, 1, 23, 18)[..., :90, :70]   # no DC: a lattice
    image = smooth + lattice
    got = degrid_numpy(image)
    want = degrid(image.double())
    assert want.dtype == torch.float64
    torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-4)
    inner = (slice(None), slice(None), slice(8, -8), slice(8, -8))
    assert (got - smooth)[inner].abs().mean() < 0.05 * lattice[inner].abs().mean()
