"""`dev/diag/painting_target.py`: the versions of a painting it scores against, and that it scores
the eval folder's outputs with the yardstick it is given."""
from __future__ import annotations

import json

import numpy as np
import pytest
from diag_import import diag_module
from PIL import Image

# A stand-in for shared/tools/style_metrics.py: the same two functions, the ratio a pixel distance.
YARDSTICK = '''
import numpy as np, torch
from PIL import Image
def load(p, max_side=None):
    im = Image.open(p).convert("RGB")
    if max_side and max(im.size) > max_side:
        s = max_side / max(im.size); im = im.resize((round(im.width * s), round(im.height * s)), Image.BICUBIC)
    return torch.from_numpy(np.asarray(im).copy()).permute(2, 0, 1).float()[None]
def metrics(photo, out, style):
    return float((out.mean() - style.mean()).abs() / (photo.mean() - style.mean()).abs()), 0.0
'''


@pytest.fixture(scope="module")
def tool():
    with diag_module("painting_target") as module:
        yield module


def test_training_sees_an_enlarged_copy_of_a_small_painting(tool, tmp_path):
    painting = tmp_path / "p.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (30, 40, 3), dtype=np.uint8)).save(painting)
    seen = tool.versions(painting, 64)
    assert seen["file (scored)"].size == (40, 30) and seen["as trained (style_size 64)"].size == (64, 48)
    assert seen["as trained, back to the file's size"].size == (40, 30)
    assert tool.versions(painting, None)["as trained (style_size None)"].size == (40, 30)


def test_it_scores_the_eval_outputs_per_version(tool, tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    photo, painting = tmp_path / "cat.png", tmp_path / "p.png"
    Image.fromarray(rng.integers(0, 100, (20, 24, 3), dtype=np.uint8)).save(photo)
    Image.fromarray(rng.integers(150, 255, (30, 40, 3), dtype=np.uint8)).save(painting)
    (tmp_path / "files").mkdir()
    Image.fromarray(rng.integers(100, 200, (20, 24, 3), dtype=np.uint8)).save(tmp_path / "files" / "cat_s_png.png")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "sm.py").write_text(YARDSTICK)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "vgg16_relu4_3.fp16.pth").touch()      # load_metrics checks it is there
    monkeypatch.setattr(tool, "default_photos", lambda: [photo])
    out = tmp_path / "t.json"
    assert tool.main(["--metrics", str(tmp_path / "tools" / "sm.py"), "--painting", str(painting), "--outputs",
                      str(tmp_path / "files"), "--style", "s", "--style-size", "64", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 5 and all(set(r["style_ratio"]) == {"cat"} for r in rows)
    assert all(0 < r["median"] < 1 for r in rows)       # the output sits between photo and painting
    assert tool.main(["--metrics", str(tmp_path / "tools" / "sm.py"), "--painting", str(painting), "--outputs",
                      str(tmp_path), "--style", "s"]) == 1      # no outputs there
