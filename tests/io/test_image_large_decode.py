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


def test_max_pixels_governs_pillows_bomb_limit_and_restores_it(tmp_path, monkeypatch):
    """Pillow refuses images over twice its MAX_IMAGE_PIXELS with its own text; an explicit
    max_pixels above that must let the image through (a 16000×12000 photo with --max-pixels
    400000000), and Pillow's limit is back afterwards. Pillow's limit is lowered here so a small
    image stands in for a huge one."""
    import styleforge.io.image as image_io
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    monkeypatch.setattr(image_io, "_PILLOW_LIMIT", 1000)
    path = tmp_path / "wide.png"
    Image.new("RGB", (100, 50), (10, 20, 30)).save(path)      # 5000 px > 2 × 1000
    with pytest.raises(ImageError, match="decompression bomb"):
        load_image(path)                                      # no limit of ours: Pillow's stands
    loaded = load_image(path, max_pixels=5000)
    assert loaded.size == (100, 50) and loaded.rgb.getpixel((3, 3)) == (10, 20, 30)
    with pytest.raises(ImageError, match="over the limit of 4,999 pixels"):
        load_image(path, max_pixels=4999)                     # ours refuses, in our words
    assert Image.MAX_IMAGE_PIXELS == 1000
