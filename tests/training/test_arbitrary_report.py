"""Reports of the arbitrary model's quality (`training/arbitrary_report.py`): per-painting medians and
issue 39's bars, CSV rows appended, a contact sheet with a cell per pair; and the eval's palette
distance against the shared tool's rule."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from PIL import Image

from styleforge.training.arbitrary_eval import PairScore
from styleforge.training.arbitrary_report import (
    append_rows,
    bars_met,
    contact_sheet,
    per_painting,
    table,
)


def scores() -> list[PairScore]:
    return [PairScore("a.jpg", "p.jpg", 0.1, 1.0, 8.0, 2.0), PairScore("b.jpg", "p.jpg", 0.3, 1.2, 12.0, 4.0),
            PairScore("a.jpg", "q.jpg", 0.15, 0.9, 20.0, 300.0), PairScore("b.jpg", "q.jpg", 0.2, 1.1, 16.0, 200.0)]


def test_medians_and_bars():
    per = per_painting(scores())
    assert per["p.jpg"]["palette_dist"] == 10.0 and per["q.jpg"]["grid_score"] == 250.0
    met = bars_met(scores())
    # overall medians: style 0.175, content 1.05, palette 14.0, grid 102
    assert met == {"style_ratio": True, "content_dist": True, "palette_dist": False, "grid_score": False,
                   "every painting's palette_dist": False}
    text = table(scores())
    assert "median over 4 pairs" in text and "palette_dist NOT met" in text


def test_rows_and_sheet(tmp_path):
    path = tmp_path / "rows.csv"
    append_rows(path, scores()[:2], "run one", "cpu")
    append_rows(path, scores()[2:], "run two", "cpu")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert [r["label"] for r in rows] == ["run one"] * 2 + ["run two"] * 2
    assert float(rows[2]["grid_score"]) == 300.0
    files = {}
    for name, colour in (("a", (200, 0, 0)), ("b", (0, 200, 0)), ("p", (0, 0, 200)), ("q", (90, 90, 90))):
        files[name] = tmp_path / f"{name}.jpg"
        Image.new("RGB", (40, 30), colour).save(files[name])
    outputs = tmp_path / "out"
    outputs.mkdir()
    Image.new("RGB", (40, 30), (250, 250, 0)).save(outputs / "b__q.png")
    sheet = contact_sheet(tmp_path / "sheet.png", scores(), [files["a"], files["b"]], [files["p"], files["q"]], outputs)
    with Image.open(sheet) as im:
        assert im.size == (3 * 224, 3 * 224)
        assert im.getpixel((2 * 224 + 112, 2 * 224 + 5)) == (250, 250, 0)     # photo b × painting q
        assert im.getpixel((1 * 224 + 112, 1 * 224 + 5)) == (255, 255, 255)   # a × p: no output written


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_palette_distance_follows_the_tool(tmp_path):
    import torch

    from styleforge.models.vgg import VGG16Features
    from styleforge.training.arbitrary_eval import PairScorer
    g = np.random.default_rng(3)
    painting = (g.random((60, 50, 3)) * 255).astype(np.uint8)
    Image.fromarray(painting).save(tmp_path / "paint.png")
    out = (g.random((48, 64, 3)) * 160).astype(np.uint8)
    dirs = np.random.default_rng(0).normal(size=(3, 32))
    dirs /= np.linalg.norm(dirs, axis=0)

    def px(a):   # the tool's _pixels: longest side to 256, bilinear
        im = Image.fromarray(a)
        s = 256 / max(im.size)
        im = im.resize((round(im.width * s), round(im.height * s)), Image.BILINEAR)
        return np.asarray(im, dtype=np.float64).reshape(-1, 3)

    q = np.linspace(0, 1, 101)
    want = np.abs(np.quantile(px(out) @ dirs, q, axis=0) - np.quantile(px(painting) @ dirs, q, axis=0)).mean()
    torch.manual_seed(0)
    vgg = VGG16Features((4, 8, 8, 8)).eval()
    photo = torch.from_numpy(out).permute(2, 0, 1)[None].float()
    _, _, palette, _ = PairScorer(vgg, photo, tmp_path / "paint.png")(photo)
    assert palette == pytest.approx(float(want), rel=1e-9)
