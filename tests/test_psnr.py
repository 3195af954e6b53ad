"""The package's one PSNR: a known value, NumPy and torch alike, sliced sums equal to one sum,
clipping as written, and a clear error for mismatched shapes."""
import math

import numpy as np
import pytest
import torch

import styleforge.psnr as psnr_module
from styleforge.psnr import psnr


def test_a_known_value_from_numpy_and_torch_alike():
    a, b = np.zeros((4, 5, 3), np.uint8), np.full((4, 5, 3), 3, np.uint8)   # uint8: no wrap-around
    want = 10 * math.log10(255 ** 2 / 9)
    assert psnr(a, b) == pytest.approx(want, abs=1e-12)
    assert psnr(torch.from_numpy(a), torch.from_numpy(b)) == pytest.approx(want, abs=1e-12)
    assert psnr(b, a) == pytest.approx(want, abs=1e-12)
    assert psnr(a, a) == math.inf


def test_slices_sum_to_the_whole(monkeypatch):
    rng = np.random.default_rng(0)
    a, b = rng.normal(128, 40, (3, 37, 41)), rng.normal(128, 40, (3, 37, 41))
    whole = 10 * math.log10(255 ** 2 / np.mean((a - b) ** 2))
    monkeypatch.setattr(psnr_module, "SLICE", 100)   # 46 slices, the last one short
    assert psnr(a, b) == pytest.approx(whole, rel=1e-12)
    assert psnr(torch.from_numpy(a).float(), torch.from_numpy(b).float()) == pytest.approx(whole, rel=1e-5)


def test_clip_compares_what_is_written():
    out, ref = torch.tensor([300.0, -20.0, 10.0]), torch.tensor([255.0, 0.0, 10.0])
    assert psnr(out, ref, clip=True) == math.inf
    assert psnr(out, ref) < 20


def test_mismatched_shapes_are_an_error():
    with pytest.raises(ValueError, match="must match"):
        psnr(np.zeros((2, 3)), np.zeros((3, 2)))
