"""Image reading and writing: every Pillow mode we promise, EXIF orientation, bad files, atomicity.

Every file is generated here, tiny, in the test's own temp folder.
"""
import os
import struct
import zlib

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.io.image import (
    ImageError,
    LoadedImage,
    array_to_tensor,
    jpeg_chroma,
    load_image,
    pil_to_tensor,
    save_image,
    tensor_to_array,
    tensor_to_pil,
)

RNG = np.random.default_rng(7)
RGB = RNG.integers(0, 256, (6, 10, 3), dtype=np.uint8)
ALPHA = RNG.integers(0, 256, (6, 10), dtype=np.uint8)
GREY16 = (np.arange(60, dtype=np.uint16).reshape(6, 10) * 1111)


def _grey(arr):
    return np.repeat(np.asarray(arr)[..., None], 3, axis=2)


# name, file, image to write, save kwargs, expected RGB (None: only checked for shape), alpha kept
MODES = [
    ("RGB", "a.png", Image.fromarray(RGB), {}, RGB, False),
    ("L", "a.png", Image.fromarray(RGB).convert("L"), {}, _grey(Image.fromarray(RGB).convert("L")), False),
    ("RGBA", "a.png", Image.fromarray(np.dstack([RGB, ALPHA])), {}, RGB, True),
    ("LA", "a.png", Image.fromarray(np.dstack([RGB[..., 0], ALPHA]), "LA"), {}, _grey(RGB[..., 0]), True),
    ("P", "a.png", Image.fromarray(RGB).quantize(16), {}, None, False),
    ("P-transparent", "a.png", Image.fromarray(RGB).quantize(16), {"transparency": 0}, None, True),
    ("CMYK", "a.tif", Image.fromarray(RGB).convert("CMYK"), {}, None, False),
    ("I;16", "a.png", Image.fromarray(GREY16), {}, _grey(np.rint(GREY16 / 257).astype(np.uint8)), False),
    ("1", "a.png", Image.fromarray(RGB).convert("1"), {}, None, False),
    ("WebP-RGB", "a.webp", Image.fromarray(RGB), {"lossless": True}, RGB, False),
    ("WebP-RGBA", "a.webp", Image.fromarray(np.dstack([RGB, ALPHA])), {"lossless": True}, RGB, True),
]


@pytest.mark.parametrize("name,filename,image,kwargs,expected,has_alpha", MODES, ids=[m[0] for m in MODES])
def test_every_mode_loads_as_rgb_and_round_trips(tmp_path, name, filename, image, kwargs, expected, has_alpha):
    path = tmp_path / filename
    image.save(path, **kwargs)
    loaded = load_image(path)
    assert loaded.rgb.mode == "RGB" and loaded.size == (10, 6)
    assert loaded.source_mode == image.mode
    if expected is not None:
        assert np.array_equal(np.asarray(loaded.rgb), expected)
    assert (loaded.alpha is not None) == has_alpha
    if name in ("RGBA", "LA", "WebP-RGBA"):
        assert np.array_equal(np.asarray(loaded.alpha), ALPHA)
    # Written back (PNG, lossless) and read again: the same pixels and alpha.
    out = save_image(loaded.merged(loaded.rgb), tmp_path / "back.png")
    again = load_image(out)
    assert np.array_equal(np.asarray(again.rgb), np.asarray(loaded.rgb))
    assert (again.alpha is None) == (loaded.alpha is None)
    if loaded.alpha is not None:
        assert np.array_equal(np.asarray(again.alpha), np.asarray(loaded.alpha))


def test_exif_orientation_is_applied(tmp_path):
    pixels = np.zeros((2, 4, 3), np.uint8)
    pixels[0, 0] = (255, 0, 0)                 # red marks the stored top-left corner
    image = Image.fromarray(pixels)
    exif = Image.Exif()
    exif[0x0112] = 6                           # "rotate 90° clockwise to display"
    image.save(tmp_path / "o.png", exif=exif.tobytes())
    loaded = load_image(tmp_path / "o.png")
    assert loaded.size == (2, 4)               # width and height swapped
    assert tuple(np.asarray(loaded.rgb)[0, 1]) == (255, 0, 0)  # top-left went to top-right


def test_max_side_downscale_keeps_aspect(tmp_path):
    Image.fromarray(np.zeros((30, 64, 4), np.uint8)).save(tmp_path / "w.png")
    loaded = load_image(tmp_path / "w.png").resized(16)
    assert loaded.size == (16, 8) and loaded.alpha.size == (16, 8)
    assert load_image(tmp_path / "w.png").resized(100).size == (64, 30)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width×height, followed by a few bytes of pixel data only."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))


def _good_png(tmp_path) -> bytes:
    Image.fromarray(RGB).save(tmp_path / "good.png")
    return (tmp_path / "good.png").read_bytes()


def _corrupt(data: bytes) -> bytes:
    start = data.index(b"IDAT") + 8
    return data[:start] + bytes(b ^ 0xFF for b in data[start:start + 20]) + data[start + 20:]


BAD = {
    "empty": (lambda tmp: b"", "empty file"),
    "truncated": (lambda tmp: _good_png(tmp)[:60], "truncated or corrupt"),
    "corrupt": (lambda tmp: _corrupt(_good_png(tmp)), "truncated or corrupt"),
    "not-an-image": (lambda tmp: b"name,age\nada,36\n" * 10, "not an image file"),
    "bomb-header": (lambda tmp: _png_header_only(100_000, 100_000), "pixels"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_files_raise_one_image_error_naming_the_file(tmp_path, kind):
    make, needle = BAD[kind]
    path = tmp_path / f"{kind}.png"
    path.write_bytes(make(tmp_path))
    with pytest.raises(ImageError) as info:
        load_image(path, max_pixels=10**8)
    assert str(path) in str(info.value) and needle in str(info.value)


def test_pixel_limit_is_checked_before_decoding(tmp_path):
    # The header claims 4000×4000 but no pixel data follows: decoding would fail differently.
    path = tmp_path / "claims.png"
    path.write_bytes(_png_header_only(4000, 4000))
    with pytest.raises(ImageError, match="16,000,000 pixels is over the limit of 1,000,000"):
        load_image(path, max_pixels=1_000_000)


def test_missing_file(tmp_path):
    with pytest.raises(ImageError, match="cannot read"):
        load_image(tmp_path / "nope.jpg")


def test_atomic_save_leaves_only_the_output(tmp_path):
    image = Image.fromarray(RGB)
    for name in ("x.jpg", "x.png", "x.webp", "x.tif"):
        save_image(image, tmp_path / "out" / name, quality=80)
    assert sorted(os.listdir(tmp_path / "out")) == ["x.jpg", "x.png", "x.tif", "x.webp"]


def test_jpeg_drops_alpha_and_quality_is_used(tmp_path):
    image = Image.fromarray(RNG.integers(0, 256, (32, 32, 4), dtype=np.uint8))
    low = save_image(image, tmp_path / "low.jpg", quality=10)
    high = save_image(image, tmp_path / "high.jpg", quality=95)
    assert Image.open(low).mode == "RGB"
    assert low.stat().st_size < high.stat().st_size


def test_jpeg_is_written_with_full_chroma_unless_asked(tmp_path):
    """Pillow's own default is 4:2:0, which halves colour resolution and blurs a style's strokes."""
    image = Image.fromarray(RNG.integers(0, 256, (32, 48, 3), dtype=np.uint8))
    full = save_image(image, tmp_path / "full.jpg")
    assert jpeg_chroma(full) == "444"
    assert jpeg_chroma(save_image(image, tmp_path / "sub.jpg", chroma="420")) == "420"
    assert jpeg_chroma(save_image(image, tmp_path / "half.jpg", chroma="422")) == "422"
    # The factors, not the label: 4:4:4 keeps a one-pixel red/blue column pattern that 4:2:0 smears.
    stripes = np.zeros((16, 16, 3), dtype=np.uint8)
    stripes[:, ::2, 0] = 255
    stripes[:, 1::2, 2] = 255
    for chroma, limit in (("444", 12), ("420", None)):
        back = np.asarray(Image.open(save_image(Image.fromarray(stripes), tmp_path / f"s{chroma}.jpg",
                                                 quality=95, chroma=chroma))).astype(int)
        error = np.abs(back - stripes).mean()
        assert error < limit if limit else error > 40, (chroma, error)
    assert jpeg_chroma(save_image(image, tmp_path / "x.png")) is None


def test_failed_save_leaves_no_file_and_no_temp(tmp_path, monkeypatch):
    def broken_save(self, fp, format=None, **params):
        fp.write(b"half an image")
        raise OSError("disk full")

    monkeypatch.setattr(Image.Image, "save", broken_save)
    with pytest.raises(ImageError, match="disk full"):
        save_image(Image.fromarray(RGB), tmp_path / "x.png")
    assert os.listdir(tmp_path) == []


def test_unknown_output_suffix(tmp_path):
    with pytest.raises(ImageError, match="suffix '.xyz'"):
        save_image(Image.fromarray(RGB), tmp_path / "x.xyz")


def test_conversions_round_trip():
    tensor = pil_to_tensor(Image.fromarray(RGB))
    assert tensor.shape == (1, 3, 6, 10) and tensor.dtype == torch.float32
    assert np.array_equal(tensor_to_array(tensor), RGB)
    assert np.array_equal(np.asarray(tensor_to_pil(tensor[0])), RGB)
    assert torch.equal(array_to_tensor(RGB), tensor)
    assert tensor_to_array(torch.tensor([[[[-3.0]], [[255.6]], [[127.5]]]])).tolist() == [[[0, 255, 128]]]


def test_merged_reattaches_alpha():
    loaded = LoadedImage(Image.fromarray(RGB), Image.fromarray(ALPHA), "RGBA")
    merged = np.asarray(loaded.merged(Image.fromarray(255 - RGB)))
    assert merged.shape == (6, 10, 4)
    assert np.array_equal(merged[..., 3], ALPHA) and np.array_equal(merged[..., :3], 255 - RGB)
