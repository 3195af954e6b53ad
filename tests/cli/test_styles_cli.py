"""`styleforge styles`: the table of installed styles and the contact sheet."""
import os

import numpy as np
import pytest
from PIL import Image

from styleforge.cli import main
from styleforge.commands.styles import GAP, LABEL_HEIGHT


def test_lists_every_style_with_its_metadata(styles_env, capsys):
    assert main(["styles"]) == 0
    out = capsys.readouterr().out
    for text in ("alpha", "beta", "test painting alpha", "nobody", "test"):
        assert text in out


def test_empty_registry_says_so(styles_env, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STYLEFORGE_STYLES_DIR", str(tmp_path))
    assert main(["styles"]) == 0
    assert "no built-in styles installed" in capsys.readouterr().out
    assert main(["styles", "--sheet", str(tmp_path / "s.png")]) == 1
    assert not (tmp_path / "s.png").exists()


@pytest.mark.slow
def test_contact_sheet(styles_env, tmp_path, capsys):
    photos = []
    for name, size in (("wide.png", (40, 20)), ("tall.jpg", (20, 40))):
        pixels = np.random.default_rng(len(name)).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(pixels).save(tmp_path / name)
        photos += ["--photo", str(tmp_path / name)]
    out = tmp_path / "sheets" / "sheet.png"
    assert main(["styles", "--sheet", str(out), *photos, "--cell", "32", "--device", "cpu"]) == 0
    assert "2 photo(s) × 2 style(s)" in capsys.readouterr().out
    sheet = np.asarray(Image.open(out).convert("RGB"))
    # Columns: the photo, alpha, beta; rows: 32×16 and 16×32 after fitting into 32 px cells.
    assert sheet.shape == (GAP + (16 + LABEL_HEIGHT + GAP) + (32 + LABEL_HEIGHT + GAP), GAP + 3 * (32 + GAP), 3)
    first_cell = sheet[GAP:GAP + 16, GAP:GAP + 32]
    wide = np.asarray(Image.open(tmp_path / "wide.png").resize((32, 16), Image.LANCZOS))
    assert np.array_equal(first_cell, wide)
    labels = sheet[GAP + 16:GAP + 16 + LABEL_HEIGHT, GAP + 32 + GAP:GAP + 2 * 32 + GAP]
    assert (labels < 128).any(), "no label drawn under the first style"
    assert os.listdir(out.parent) == ["sheet.png"]


def test_sheet_with_a_bad_photo_fails_cleanly(styles_env, tmp_path, capsys):
    (tmp_path / "bad.png").write_bytes(b"nope")
    code = main(["styles", "--sheet", str(tmp_path / "s.png"), "--photo", str(tmp_path / "bad.png")])
    assert code == 1 and "bad.png" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == ["bad.png"]
