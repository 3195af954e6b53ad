"""The API never returns a silently wrong image: bad blend weights, empty images, NaN/inf pixels
and non-finite network outputs are errors that say what to do."""
import warnings

import numpy as np
import pytest
import torch
from conftest import random_style_state
from PIL import Image

import styleforge
from styleforge.engine.backends import SlowPrecisionWarning
from styleforge.engine.checks import NonFiniteOutputError
from styleforge.engine.options import StylizeOptions, parse_blend
from styleforge.models.checkpoint import save_checkpoint

OPTS = {"device": "cpu", "precision": "fp32"}


@pytest.mark.parametrize("spec, message", [
    ("alpha:nan", "is nan; use a finite number"), ("alpha:inf", "is inf"), ("alpha:-inf", "is -inf"),
    ("alpha:1e308,beta:1e308", "over 1e\\+06"), ("alpha:-1", "negative"), ("alpha:0", "positive weight"),
])
def test_blend_weights_that_would_give_black_images_are_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_blend(spec)


@pytest.mark.parametrize("blend, message", [
    ((("alpha", -0.5), ("beta", 1.5)), "negative"), ((("alpha", float("nan")),), "nan"),
    ((("alpha", "0.5"),), "must be a number"), ((("", 1.0),), "non-empty string"), ((("alpha",),), "(name, weight)"),
])
def test_api_blend_tuples_are_checked_like_the_flag(blend, message):
    with pytest.raises(ValueError, match=message):
        StylizeOptions(blend=blend)
    assert StylizeOptions(blend=[("alpha", 1), ("beta", 3)]).blend == (("alpha", 1.0), ("beta", 3.0))


@pytest.mark.parametrize("image", [
    Image.new("RGB", (0, 0)), np.zeros((0, 0, 3), np.uint8), np.zeros((5, 0), np.float32),
    torch.zeros(3, 0, 0), torch.zeros(1, 3, 4, 0),
], ids=["pil", "numpy", "numpy-grey", "tensor", "batch"])
def test_images_without_pixels_are_a_clear_error(styles_env, image):
    with pytest.raises(ValueError, match="has no pixels"):
        styleforge.stylize(image, **OPTS)


def test_non_finite_float_pixels_are_refused(styles_env):
    array = np.full((8, 9, 3), 0.5, np.float32)
    array[3, 4, 1] = np.nan
    with pytest.raises(ValueError, match="holds 1 NaN or inf values"):
        styleforge.stylize(array, **OPTS)
    tensor = torch.full((1, 3, 8, 9), 0.5)
    tensor[0, 0, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="nan_to_num"):
        styleforge.stylize(tensor, **OPTS)
    assert np.isfinite(styleforge.stylize(np.nan_to_num(array), **OPTS)).all()


def test_a_style_whose_output_is_not_finite_is_an_error(styles_env, tmp_path):
    state = random_style_state(4)
    state["conv1.conv2d.weight"] = torch.full_like(state["conv1.conv2d.weight"], 3e38)  # inf → NaN in the norm
    path = save_checkpoint(tmp_path / "wild.safetensors", state, {"style": "wild"}, dtype=torch.float32)
    with pytest.raises(NonFiniteOutputError, match="style wild: the stylized image holds NaN or inf"):
        styleforge.stylize(np.full((16, 16, 3), 100, np.uint8), checkpoint=str(path), **OPTS)
    with pytest.raises(NonFiniteOutputError):
        styleforge.stylize(Image.new("RGB", (16, 16), "white"), checkpoint=str(path), **OPTS)


def test_fp16_on_cpu_warns_and_auto_never_picks_it(monkeypatch):
    from styleforge.engine import backends
    with pytest.warns(SlowPrecisionWarning, match="fp16 on the CPU is emulated"):
        assert backends.resolve_dtype("fp16", torch.device("cpu")) == torch.float16
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    for native, want in ((True, torch.bfloat16), (False, torch.float32)):   # either kind of CPU
        monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda native=native: native)
        with warnings.catch_warnings():
            warnings.simplefilter("error", SlowPrecisionWarning)
            assert backends.resolve_dtype("auto", torch.device("cpu")) == want


def test_memory_budgets_take_the_strings_the_flags_take():
    options = StylizeOptions(max_memory="8G", max_gpu_memory="512MiB")
    assert options.max_memory == 8 << 30 and options.max_gpu_memory == 512 << 20
    assert StylizeOptions(max_memory=1000).max_memory == 1000
    with pytest.raises(ValueError, match="max_memory: 'lots' is not a size"):
        StylizeOptions(max_memory="lots")
