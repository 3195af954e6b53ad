"""The style network's INT8 recipe: the norm-input equalization (exact in fp32, unit channels),
the per-style forms, and the check's fall-back, chosen and read back from the cache.

The equalization and the score are plain PyTorch/NumPy (fast); whatever quantizes is `slow` and
skipped where openvino/nncf are not installed.
"""
from __future__ import annotations

import pytest
import torch

from styleforge.engine.norm_equalize import PAIRS, channel_stats, equalize
from styleforge.engine.openvino_runner import openvino_available
from styleforge.engine.style_int8 import INT8_MEASURED, check_photos, first_form
from styleforge.psnr import psnr
from tests.conftest import random_net, rel_error

needs_openvino = pytest.mark.skipif(not openvino_available("int8")[0], reason="openvino/nncf not installed")


def lopsided_net(seed: int = 0) -> torch.nn.Module:
    """A random network whose norm inputs are far apart: each conv ahead of a norm gets its
    output channels scaled over three decades and shifted, which a norm does not see."""
    model = random_net(seed)
    modules = dict(model.named_modules())
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for conv_name, _ in PAIRS:
            conv = modules[conv_name]
            scale = 10 ** torch.linspace(-1, 2, conv.out_channels)[torch.randperm(conv.out_channels, generator=gen)]
            conv.weight.mul_(scale.view(-1, 1, 1, 1))
            conv.bias.mul_(scale).add_(torch.randn(conv.out_channels, generator=gen) * 50 * scale)
    return model


def images(count: int = 3, size: tuple[int, int] = (40, 56)) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return [torch.rand((1, 3, *size), generator=gen) * 255 for _ in range(count)]


def test_equalize_keeps_the_output_and_gives_the_norms_unit_centred_inputs():
    model = lopsided_net()
    before = {name: p.clone() for name, p in model.state_dict().items()}
    calibration = images()
    equal = equalize(model, calibration)
    x = torch.rand(1, 3, 36, 52) * 255                       # not a calibration image
    with torch.no_grad():
        assert rel_error(equal(x), model(x)) < 1e-4
    assert all(torch.equal(before[n], p) for n, p in model.state_dict().items())   # a copy was changed
    lopsided = channel_stats(model, calibration)["in1"][1]
    assert float(lopsided.max() / lopsided.min()) > 100
    for name, (mean, spread) in channel_stats(equal, calibration).items():
        assert mean.abs().max() < 1e-3, name
        assert torch.allclose(spread, torch.ones_like(spread), atol=1e-3), name


def test_equalize_leaves_a_dead_channel_alone():
    model = random_net(2)
    conv = dict(model.named_modules())["conv1.conv2d"]
    with torch.no_grad():
        conv.weight[5].zero_()
        conv.bias[5] = 3.0
    equal = equalize(model, images(2))
    x = torch.rand(1, 3, 32, 32) * 255
    with torch.no_grad():
        assert torch.isfinite(equal(x)).all()
        assert rel_error(equal(x), model(x)) < 1e-4


def test_the_styles_measured_all_int8_are_the_shipped_weights():
    """A retrained style changes its digest: its entry then goes stale and must be measured again."""
    from styleforge.engine.openvino_runner import weights_digest
    from styleforge.models.checkpoint import build_model
    from styleforge.models.registry import load_style
    assert INT8_MEASURED
    for digest, style in INT8_MEASURED.items():
        assert weights_digest(build_model(load_style(style)))[:16] == digest, style
        assert first_form(digest + "0" * 48) == "int8"
    assert first_form("0" * 64) == "int8-float-norm-inputs"      # any other weights, the user's too


def test_primeros_memoriales_keeps_the_float_norm_inputs_form():
    """Its `int8` form kept the style ratio but lifted the CLI's PNG grid over issue 44's 10."""
    from styleforge.engine.openvino_runner import weights_digest
    from styleforge.models.checkpoint import build_model
    from styleforge.models.registry import load_style
    digest = weights_digest(build_model(load_style("primeros_memoriales")))
    assert first_form(digest) == "int8-float-norm-inputs"


def test_check_photos_are_the_unaltered_largest_calibration_images():
    from styleforge.engine.openvino_runner import CALIBRATION_SIDES, calibration_images
    calibration = calibration_images()
    chosen = check_photos(calibration)
    assert len(chosen) == 3
    assert all(max(image.shape[2:]) == max(CALIBRATION_SIDES) for image in chosen)
    assert all(any(image is c for c in calibration[::4]) for image in chosen)


@pytest.mark.slow
@needs_openvino
def test_equalized_int8_keeps_lopsided_norm_inputs_that_plain_int8_loses():
    from styleforge.engine.openvino_runner import export, quantize
    from styleforge.engine.style_int8 import outputs
    model = lopsided_net()
    calibration = [x.numpy() for x in images(4)]
    photos = [x.numpy() for x in images(2, (48, 64))]
    fp32 = outputs(export(model), photos, "fp32")
    plain = outputs(quantize(export(model), calibration), photos, "int8")
    equal = outputs(quantize(export(equalize(model, [torch.from_numpy(c) for c in calibration])), calibration),
                    photos, "int8")
    plain_db = min(psnr(o, r, clip=True) for o, r in zip(plain, fp32))
    equal_db = min(psnr(o, r, clip=True) for o, r in zip(equal, fp32))
    assert equal_db > plain_db + 6, (plain_db, equal_db)


@pytest.mark.slow
@needs_openvino
def test_the_check_falls_back_form_by_form_and_the_cache_remembers(tmp_path, monkeypatch):
    from styleforge.engine import openvino_runner, style_int8
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(openvino_runner, "CALIBRATION_SIDES", (64,))
    model = random_net(4)
    x = torch.rand(1, 3, 48, 40) * 255
    with torch.no_grad():
        want = model(x)
    tried = []
    real_quantize, real_export = openvino_runner.quantize, openvino_runner.export

    def counting_quantize(ov_model, images, ignored_scope=None):
        tried.append(ignored_scope)
        return real_quantize(ov_model, images, ignored_scope=ignored_scope)
    monkeypatch.setattr(openvino_runner, "quantize", counting_quantize)

    # An unreachable bar: the weights' form (listed: all INT8), then the next, then fp32 (equal to PyTorch).
    digest = openvino_runner.weights_digest(model)[:16]
    monkeypatch.setitem(style_int8.INT8_MEASURED, digest, "test")
    monkeypatch.setattr(style_int8, "MIN_PSNR_DB", 1e9)
    strict = openvino_runner.OpenVINORunner(model, "int8", threads=2)
    assert strict.form == "fp32"
    assert len(tried) == 2 and tried[0] is None and list(tried[1].types) == ["MVN"]
    assert rel_error(strict(x), want) < 1e-4

    def fail(*_args, **_kwargs):
        raise AssertionError("the cached model was rebuilt")
    monkeypatch.setattr(openvino_runner, "quantize", fail)
    monkeypatch.setattr(openvino_runner, "export", fail)
    again = openvino_runner.OpenVINORunner(model, "int8", threads=2)
    assert again.form == "fp32" and torch.equal(again(x), strict(x))

    # A bar any output passes; weights not listed: float norm inputs, the only form tried.
    monkeypatch.setattr(openvino_runner, "quantize", counting_quantize)
    monkeypatch.setattr(openvino_runner, "export", real_export)
    monkeypatch.setattr(style_int8, "MIN_PSNR_DB", -1e9)
    tried.clear()
    loose = openvino_runner.OpenVINORunner(random_net(5), "int8", threads=2)
    assert loose.form == "int8-float-norm-inputs" and list(tried[0].types) == ["MVN"] and len(tried) == 1
    assert not torch.equal(loose(x), strict(x))

    # The same weights measured later (listed): their cached float-norm-inputs entry is not read back.
    monkeypatch.setitem(style_int8.INT8_MEASURED, openvino_runner.weights_digest(random_net(5))[:16], "test")
    tried.clear()
    listed = openvino_runner.OpenVINORunner(random_net(5), "int8", threads=2)
    assert listed.form == "int8" and tried == [None]
