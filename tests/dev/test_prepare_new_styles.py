"""`dev/prepare_new_styles.py`: every prepared painting has its longer side at exactly SIDE, so
training (which resizes to style_size) and issue 44's yardstick (which only shrinks to 512) see
the same painting; a crop box is applied in source pixels before that."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def prep():
    sys.path.insert(0, str(ROOT / "dev"))
    try:
        import prepare_new_styles
        yield prepare_new_styles
    finally:
        sys.path.remove(str(ROOT / "dev"))


def png(array: np.ndarray, mode: str) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array, mode).save(buffer, format="PNG")
    return buffer.getvalue()


def test_a_small_codex_page_is_upsampled_to_the_side_training_sees(prep):
    page = np.zeros((120, 100, 2), np.uint8)          # LA: white lines on opaque black
    page[..., 1] = 255
    page[20:100, 30:32, 0] = 255
    page[50:52, 10:90, 0] = 255
    image = prep.prepare(png(page, "LA"), "ink")
    assert max(image.size) == prep.SIDE
    assert image.size == (prep.SIDE, prep.SIDE)      # the lines' 80×80 bounding box, ×6.4
    pixels = np.asarray(image, np.float64)
    assert pixels[0, 0] == pytest.approx(prep.PARCHMENT, abs=1)     # paper where no line was
    assert pixels.min() < 60                                         # the lines became dark ink


def test_a_crop_box_is_cut_in_source_pixels_before_resizing(prep):
    photo = np.full((300, 400, 3), 200, np.uint8)
    photo[:, :100] = 0                                  # a dark wall left of the relief
    image = prep.prepare(png(photo, "RGB"), "as_is", (100, 0, 400, 300))
    assert image.size == (prep.SIDE, prep.SIDE)      # the 300×300 box
    assert np.asarray(image).min() > 190               # none of the wall left
    large = prep.prepare(png(np.full((900, 1200, 3), 90, np.uint8), "RGB"), "as_is")
    assert large.size == (prep.SIDE, 480)
