"""`dev/diag/udnie_blotches.py`'s layers probe: swapping a norm's statistics is exact (a norm given
its own input's statistics changes nothing) and normalises by the statistics it is given."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch
from conftest import random_net

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, str(ROOT / "dev" / "diag"))
    try:
        import udnie_blotches
        yield udnie_blotches
    finally:
        sys.path.remove(str(ROOT / "dev" / "diag"))


def test_a_norm_given_its_own_statistics_changes_nothing(tool):
    net = random_net(0)
    x = torch.rand(1, 3, 32, 48) * 255
    own = tool.norm_statistics(net, x)
    assert set(own) == set(tool.norms(net)) and len(own) == 15
    torch.testing.assert_close(tool.with_statistics(net, x, own), net(x), rtol=1e-4, atol=1e-3)


def test_another_images_statistics_replace_the_norms_own(tool):
    net = random_net(1)
    x, y = torch.rand(1, 3, 32, 48) * 255, torch.rand(1, 3, 24, 24) * 128
    mean, var = tool.norm_statistics(net, y)["in1"]

    class Fixed(torch.nn.Module):       # in1 normalising by y's statistics, written out
        def forward(self, t):
            norm = net.in1
            return ((t - mean) / torch.sqrt(var + norm.eps) * norm.weight.view(1, -1, 1, 1)
                    + norm.bias.view(1, -1, 1, 1))
    expected = copy.deepcopy(net)
    expected.in1 = Fixed()
    swapped = tool.with_statistics(net, x, {"in1": (mean, var)})
    torch.testing.assert_close(swapped, expected(x), rtol=1e-4, atol=1e-3)
    assert (swapped - net(x)).abs().max() > 1.0
