"""Stroke scale (engine.stroke): the internal size, banded upsampling that equals the whole-image
one, detail restoration, and the Stylizer's use of them."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from styleforge.engine.options import StylizeOptions
from styleforge.engine.pipeline import Stylizer
from styleforge.engine.stroke import downscale, internal_size, restore_detail


def test_internal_size():
    assert internal_size(1024, 2048, None) == (256, 512)       # auto: a 512-px look
    assert internal_size(300, 400, None) == (300, 400)         # small images stay native
    assert internal_size(1024, 2048, 1.0) == (1024, 2048)
    assert internal_size(99, 51, 3.0) == (33, 17)


def test_banded_upsampling_equals_whole_image_bicubic():
    small = torch.rand(1, 3, 13, 9) * 255
    zeros = torch.zeros(1, 3, 13, 9)
    out = restore_detail(torch.zeros(1, 3, 50, 31), zeros, small, band_rows=7)
    want = F.interpolate(small, size=(50, 31), mode="bicubic", align_corners=False).clamp(0, 255)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-3)


def test_identity_style_gives_back_a_grey_photo():
    grey = torch.rand(1, 1, 60, 44).expand(1, 3, 60, 44) * 255
    small = downscale(grey, (20, 15))
    out = restore_detail(grey, small, small, band_rows=16)
    assert (out - grey).abs().max() < 0.05


def test_stylizer_with_stroke_scale_keeps_the_size(styles_env):
    x = torch.rand(1, 3, 70, 45) * 255
    out = Stylizer(StylizeOptions(style="alpha", device="cpu", stroke_scale=3.0))(x)
    native = Stylizer(StylizeOptions(style="alpha", device="cpu", stroke_scale=1.0))(x)
    assert out.shape == x.shape and 0 <= out.min() and out.max() <= 255
    assert not torch.allclose(out, native)


@pytest.mark.gpu
def test_whole_frame_restore_on_cuda_equals_the_banded_cpu_one():
    content = torch.rand(1, 3, 301, 517) * 255
    small = downscale(content, (75, 129))
    styled = torch.rand(1, 3, 75, 129) * 255
    cpu = restore_detail(content, small, styled, band_rows=64)
    gpu = restore_detail(content.cuda(), small.cuda(), styled.cuda())
    assert (gpu.cpu() - cpu).abs().max() < 1e-2


def test_precompensation_survives_the_round_trip_better_than_plain_upsampling():
    from styleforge.engine.stroke import precompensate, round_trip
    g = torch.Generator().manual_seed(0)
    small = F.avg_pool2d(torch.rand(1, 3, 64, 48, generator=g, dtype=torch.float64) * 255, 2).float()  # strokes
    plain = (round_trip(small, 2.0) - small).square().mean()
    pre = (round_trip(precompensate(small, (128, 96)), 2.0) - small).square().mean()
    assert pre < 0.2 * plain


def test_precompensation_is_skipped_when_not_upsampling_or_too_big(monkeypatch):
    from styleforge.engine import stroke
    small = torch.rand(1, 3, 20, 10) * 255
    assert torch.equal(stroke.precompensate(small, (20, 10)), small)
    monkeypatch.setattr(stroke, "PRECOMPENSATE_MAX_PIXELS", 100)
    assert torch.equal(stroke.precompensate(small, (200, 100)), small)


@pytest.mark.parametrize("factor", [2.0, 1.5, 1.37])
def test_precompensation_by_matrices_equals_the_resize_iterations(factor):
    # The GPU path (the round trip as R_h·p·R_wᵀ) against the resize loop, both on the CPU.
    from styleforge.engine import stroke
    g = torch.Generator().manual_seed(0)
    s = torch.rand(1, 3, 36, 64, generator=g, dtype=torch.float64) * 255
    want = s.clone()
    for _ in range(stroke.PRECOMPENSATE_STEPS):
        want += s - stroke.round_trip(want, factor)
    got = stroke.precompensate_by_matrices(s.float(), factor)
    assert float((got.double() - want).abs().max()) < 1e-3
