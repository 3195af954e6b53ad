"""The Python API returns the kind of image it was given, with the documented shapes and dtypes."""
import numpy as np
import pytest
import torch
from PIL import Image

import styleforge
from styleforge import api
from styleforge.models import TransformerNet

OPTS = {"device": "cpu", "precision": "fp32"}


@pytest.fixture
def rgb():
    return np.random.default_rng(1).integers(0, 256, (13, 18, 3), dtype=np.uint8)


def test_path_in_pil_out(styles_env, tmp_path, rgb):
    Image.fromarray(rgb).save(tmp_path / "p.png")
    out = styleforge.stylize(tmp_path / "p.png", **OPTS)
    assert isinstance(out, Image.Image) and out.mode == "RGB" and out.size == (18, 13)
    assert styleforge.stylize(str(tmp_path / "p.png"), max_side=9, **OPTS).size == (9, 6)
    assert list((tmp_path).iterdir()) == [tmp_path / "p.png"]  # nothing written


@pytest.mark.parametrize("mode,out_mode", [("RGB", "RGB"), ("RGBA", "RGBA"), ("L", "RGB"), ("P", "RGB")])
def test_pil_in_pil_out(styles_env, rgb, mode, out_mode):
    image = Image.fromarray(rgb).convert(mode)
    out = styleforge.stylize(image, "beta", **OPTS)
    assert isinstance(out, Image.Image) and out.mode == out_mode and out.size == image.size
    if mode == "RGBA":
        assert np.array_equal(np.asarray(out)[..., 3], np.asarray(image)[..., 3])


def test_numpy_uint8(styles_env, rgb):
    out = styleforge.stylize(rgb, **OPTS)
    assert out.dtype == np.uint8 and out.shape == rgb.shape
    grey = styleforge.stylize(rgb[..., 0], **OPTS)
    assert grey.dtype == np.uint8 and grey.shape == (13, 18, 3)
    rgba = np.dstack([rgb, np.full((13, 18), 77, np.uint8)])
    out4 = styleforge.stylize(rgba, **OPTS)
    assert out4.shape == (13, 18, 4) and (out4[..., 3] == 77).all()
    assert np.array_equal(out4[..., :3], out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_float_in_unit_range(styles_env, rgb, dtype):
    image = rgb.astype(dtype) / 255
    out = styleforge.stylize(image, **OPTS)
    assert out.dtype == dtype and out.shape == rgb.shape
    assert 0 <= out.min() and out.max() <= 1
    as_uint8 = styleforge.stylize(rgb, **OPTS)
    assert np.abs(out * 255 - as_uint8).max() <= 0.51  # the same picture, before rounding


def test_tensor_uint8_chw_and_float_nchw(styles_env, rgb):
    chw = torch.from_numpy(rgb).permute(2, 0, 1).contiguous()
    out = styleforge.stylize(chw, **OPTS)
    assert out.dtype == torch.uint8 and out.shape == chw.shape
    nchw = torch.stack([chw, chw.flip(-1)]).float() / 255
    batch = styleforge.stylize(nchw, batch_size=2, **OPTS)
    assert batch.dtype == torch.float32 and batch.shape == (2, 3, 13, 18)
    assert 0 <= batch.min() and batch.max() <= 1
    assert (batch[0] * 255 - out.float()).abs().max() <= 0.51
    assert not batch.requires_grad and not batch.is_inference()


def test_tensor_strength_zero_is_identity(styles_env):
    x = torch.rand(1, 4, 9, 7, dtype=torch.float64)
    out = styleforge.stylize(x, strength=0.0, **OPTS)
    assert out.dtype == torch.float64 and torch.allclose(out, x, atol=1e-6)


@pytest.mark.parametrize("bad,error", [
    ("not a file.png", ValueError), (object(), TypeError), (np.zeros((2, 3, 4, 5)), ValueError),
    (torch.zeros(3, 4, 4, dtype=torch.int32), TypeError), (torch.zeros(2, 4, 4), ValueError),
])
def test_bad_inputs(styles_env, bad, error):
    with pytest.raises(error):
        styleforge.stylize(bad, **OPTS)


@pytest.mark.slow
def test_stylizers_are_cached_per_options(styles_env, rgb):
    api.clear_cache()
    styleforge.stylize(rgb, **OPTS)
    styleforge.stylize(rgb, quality=50, overwrite=True, **OPTS)   # I/O fields: same engine
    assert api._cached_stylizer.cache_info().hits == 1
    styleforge.stylize(rgb, "beta", **OPTS)
    assert api._cached_stylizer.cache_info().misses == 2


def test_options_object_and_fields_combine(styles_env, rgb):
    base = styleforge.StylizeOptions(style="beta", strength=0.0, device="cpu")
    assert np.array_equal(styleforge.stylize(rgb, options=base), rgb)
    with pytest.raises(TypeError):
        styleforge.stylize(rgb, not_an_option=1)
    with pytest.raises(ValueError, match="strength"):
        styleforge.stylize(rgb, strength=2.0)


def test_load_style_and_list_styles(styles_env):
    model = styleforge.load_style("alpha")
    assert isinstance(model, TransformerNet) and not model.training
    assert [s.name for s in styleforge.list_styles()] == ["alpha", "beta"]
    assert styleforge.list_styles()[1].painting == "test painting beta"
    assert isinstance(styleforge.load_style(styles_env / "beta.safetensors"), TransformerNet)
