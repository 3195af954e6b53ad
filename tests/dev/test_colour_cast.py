"""`dev/diag/colour_cast.py`: its CIELAB means and green share, and a style's row against its painting."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import random_style_state
from diag_import import diag_module
from PIL import Image

from styleforge.models.checkpoint import save_checkpoint


@pytest.fixture(scope="module")
def tool():
    with diag_module("colour_cast") as module:
        yield module


def test_grey_has_no_tint_and_green_is_counted(tool):
    grey = tool.lab_stats(np.full((8, 8, 3), 128, np.uint8))
    assert abs(grey["a"]) < 0.5 and abs(grey["b"]) < 0.5 and grey["green_share"] == 0.0
    half = np.full((8, 8, 3), 128, np.uint8)
    half[:4] = (40, 160, 60)                       # a clear green: CIELAB a* about −50
    green = tool.lab_stats(half)
    assert green["green_share"] == pytest.approx(0.5) and green["a"] < -20


def test_a_styles_row_measures_each_photo_against_its_painting(tool, tmp_path):
    weights = tmp_path / "s.safetensors"
    save_checkpoint(weights, random_style_state(1), {"style": "s", "painting_file": "p.png"}, dtype=torch.float32)
    Image.fromarray(np.full((20, 30, 3), (40, 160, 60), np.uint8)).save(tmp_path / "p.png")
    photo = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (24, 32, 3), dtype=np.uint8)).save(photo)
    row = tool.style_row(weights, tmp_path, [photo])
    assert row["painting"]["green_share"] == 1.0 and row["painting_file"] == "p.png"
    only = row["photos"][0]
    assert row["to_painting"] == pytest.approx(tool.distance(only["output"], row["painting"]), abs=0.01)
    assert row["to_photo"] == pytest.approx(tool.distance(only["output"], only["photo_lab"]), abs=0.01)
