"""Large-image decoding: JPEG draft decoding under --max-side, and a size check (the engine's
memory budget) that refuses from the header, before anything is decoded."""
from __future__ import annotations

import pytest
from PIL import Image

from styleforge.io.image import ImageError, fitted_size, load_image


def test_jpeg_is_decoded_at_a_reduced_scale_when_it_will_be_downscaled(tmp_path):
    path = tmp_path / "big.jpg"
    Image.new("RGB", (800, 600), (200, 30, 60)).save(path)
    loaded = load_image(path, max_side=100)
    assert 100 <= max(loaded.size) <= 200          # a 1/4 DCT decode, not 800×600
    assert loaded.resized(100).size == fitted_size(800, 600, 100) == (100, 75)
    assert load_image(path).size == (800, 600)


def test_a_refusing_check_becomes_one_image_error_before_decoding(tmp_path):
    path = tmp_path / "p.png"
    Image.new("RGB", (64, 48)).save(path)
    seen = []

    def refuse(width, height):
        seen.append((width, height))
        raise RuntimeError("needs 9 GiB; use --max-side 32")
    with pytest.raises(ImageError, match=r"p.png: needs 9 GiB; use --max-side 32"):
        load_image(path, max_side=32, check=refuse)
    assert seen == [(32, 24)]
