"""styleforge.regions: a look equals the library's own stylize; masks select exactly their pixels.

Tiny random-weight styles (conftest `styles_env`), 20×28 images, CPU, reference backend.
"""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import styleforge
from styleforge.regions import Look, mask_weights, stylize_regions

CPU = dict(device="cpu", backend="reference", precision="fp32")


@pytest.fixture
def photo():
    rng = np.random.default_rng(3)
    return Image.fromarray(rng.integers(0, 255, (20, 28, 3), dtype=np.uint8))


def diff(a: Image.Image, b: Image.Image) -> int:
    return int(np.abs(np.asarray(a, np.int16) - np.asarray(b, np.int16)).max())


@pytest.mark.parametrize("look, fields", [
    (Look("alpha"), dict(style="alpha")),
    pytest.param(Look("alpha", strength=0.6, preserve_color=True),
                 dict(style="alpha", strength=0.6, preserve_color=True), marks=pytest.mark.slow),
    pytest.param(Look("alpha", "beta", 0.3), dict(blend="alpha:0.7,beta:0.3"), marks=pytest.mark.slow),
    pytest.param(Look("alpha", "beta", 1.0), dict(style="beta"), marks=pytest.mark.slow),
])
def test_look_equals_library_stylize(styles_env, photo, look, fields):
    got = stylize_regions(photo, look, **CPU).image
    want = styleforge.stylize(photo, **fields, **CPU)
    assert got.size == photo.size
    assert diff(got, want) <= 1        # uint8 rounding of the same float result


def test_mask_inside_only_and_two_styles(styles_env, photo):
    mask = np.zeros((20, 28), bool)
    mask[:, :14] = True
    alpha = styleforge.stylize(photo, "alpha", **CPU)
    beta = styleforge.stylize(photo, "beta", **CPU)
    inside = np.asarray(stylize_regions(photo, Look("alpha"), mask=mask, feather=0, **CPU).image)
    assert np.array_equal(inside[:, 14:], np.asarray(photo)[:, 14:])
    assert np.abs(inside[:, :14].astype(int) - np.asarray(alpha)[:, :14]).max() <= 1
    two = np.asarray(stylize_regions(photo, Look("alpha"), mask=mask, outside=Look("beta"),
                                     feather=0, **CPU).image)
    assert np.abs(two[:, 14:].astype(int) - np.asarray(beta)[:, 14:]).max() <= 1
    assert np.abs(two[:, :14].astype(int) - np.asarray(alpha)[:, :14]).max() <= 1


@pytest.mark.slow
def test_alpha_is_kept_and_mask_is_resized(styles_env, photo):
    rgba = photo.convert("RGBA")
    rgba.putalpha(Image.new("L", photo.size, 77))
    half = Image.new("L", (56, 40), 0)
    half.paste(255, (0, 0, 28, 40))
    out = stylize_regions(rgba, Look("alpha"), mask=half, **CPU).image
    assert out.mode == "RGBA" and out.size == photo.size
    assert set(np.asarray(out)[..., 3].ravel()) == {77}
    weights = mask_weights(half, photo.size, feather=0)
    assert weights.shape == (1, 1, 20, 28) and weights[..., :14].min() == 1 and weights[..., 14:].max() == 0


def test_look_rejects_out_of_range():
    with pytest.raises(ValueError, match="blend"):
        Look("alpha", "beta", 1.5)
    with pytest.raises(ValueError, match="strength"):
        Look("alpha", strength=-0.1)
