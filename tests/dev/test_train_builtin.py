"""`dev/train_builtin.py`: the style-loss flags reach each style's TrainConfig, and `--metrics`
scores a style's weights on the held-out photos with the given style_metrics module (here a tiny
fake one that reports image sizes and JPEG chroma, so the medians can be checked exactly): the
files the CLI writes at each photo's own size, PNG and JPEG 4:4:4, and the older 512-px preview."""
from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import random_style_state, tiny_training_data
from PIL import Image

from styleforge.models.checkpoint import save_checkpoint
from styleforge.training import samples
from styleforge.training.catalogue import RECIPE, get
from styleforge.training.samples import load_photos

DEV = Path(__file__).resolve().parents[2] / "dev"

# What a style_metrics module provides, reporting sizes: style_ratio = the painting's width as
# loaded, content_dist = the output's height, grid_score = the written file's width,
# palette_dist = 0 for a PNG, 1 + Pillow's chroma sampling code for a JPEG (0 = 4:4:4, 2 = 4:2:0).
FAKE_METRICS = '''
import numpy as np, torch
from PIL import Image

def load(p, max_side=None):
    im = Image.open(p).convert("RGB")
    if max_side and max(im.size) > max_side:
        s = max_side / max(im.size); im = im.resize((round(im.width * s), round(im.height * s)))
    return torch.from_numpy(np.asarray(im).copy()).permute(2, 0, 1).float()[None]

def metrics(photo, out, style):
    return float(style.shape[-1]), float(out.shape[-2])

def palette_dist(out_path, painting_path):
    from PIL import JpegImagePlugin
    im = Image.open(out_path)
    return 0.0 if im.format == "PNG" else 1.0 + JpegImagePlugin.get_sampling(im)

def grid_score(path):
    return float(Image.open(path).width)
'''


def load_tool(name: str):
    spec = importlib.util.spec_from_file_location(name, DEV / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tools():
    sys.path.insert(0, str(DEV))        # train_builtin imports its sibling tools, as when run as a script
    try:
        yield load_tool("train_builtin"), load_tool("eval_styles")
    finally:
        sys.path.remove(str(DEV))


@pytest.fixture()
def fake_metrics(tmp_path) -> Path:
    module = tmp_path / "metrics" / "tools" / "style_metrics.py"
    module.parent.mkdir(parents=True)
    module.write_text(FAKE_METRICS)
    (tmp_path / "metrics" / "data").mkdir()
    (tmp_path / "metrics" / "data" / "vgg16_relu4_3.fp16.pth").write_bytes(b"")   # the fake never reads it
    return module


def test_style_loss_flags_reach_each_style(tools):
    train_builtin, _ = tools
    args = train_builtin.parse_args(["--style-reduction", "frobenius", "--style-weight-scale", "0.2"])
    assert train_builtin.overrides(args)["style_reduction"] == "frobenius"
    assert train_builtin.style_weight(args, "udnie") == {"style_weight": pytest.approx(5e10 * 0.2)}
    assert train_builtin.style_weight(args, "rain_princess") == {"style_weight": pytest.approx(1e10 * 0.2)}
    plain = train_builtin.parse_args([])
    assert "style_reduction" not in train_builtin.overrides(plain) and train_builtin.style_weight(plain, "udnie") == {}
    config = get("udnie").config("p", **train_builtin.overrides(args), **train_builtin.style_weight(args, "udnie"))
    assert (config.style_reduction, config.style_weight) == ("frobenius", pytest.approx(1e10))
    assert RECIPE.get("style_reduction") is None        # the shipped recipe is unchanged: mean


def test_metrics_path_without_its_vgg_is_refused_before_any_work(tools, tmp_path):
    _, eval_styles = tools
    lone = tmp_path / "style_metrics.py"
    lone.write_text(FAKE_METRICS)
    with pytest.raises(FileNotFoundError, match="tools/style_metrics.py"):
        eval_styles.load_metrics(lone)


def style_painting_photos(tmp_path, sizes):
    """A random style file, a black 40×30 painting and one flat grey JPEG per (width, height)."""
    weights = tmp_path / "w.safetensors"
    save_checkpoint(weights, random_style_state(1), {"style": "w"}, dtype=torch.float32)
    painting = tmp_path / "painting.png"
    Image.fromarray(np.zeros((30, 40, 3), np.uint8)).save(painting)
    photos = []
    for i, (w, h) in enumerate(sizes):
        photos.append(tmp_path / f"photo{i}.jpg")
        Image.fromarray(np.full((h, w, 3), 40 * i, np.uint8)).save(photos[-1])
    return weights, painting, photos


def test_heldout_medians_score_the_512px_outputs(tools, fake_metrics, tmp_path):
    _, eval_styles = tools
    # small, so the default tier stays fast; one wider than 512 px
    weights, painting, photos = style_painting_photos(tmp_path, ((600, 46), (26, 18), (30, 42)))
    medians = eval_styles.heldout_medians(eval_styles.load_metrics(fake_metrics), weights, painting, photos)
    sizes = [p.shape[-2:] for p in load_photos(photos)]
    assert tuple(sizes[0]) == (39, 512)                                # shrunk to a longer side of 512
    assert medians == {"style_ratio": 40.0, "content_dist": statistics.median(float(h) for h, _ in sizes),
                       "palette_dist": 0.0, "grid_score": statistics.median(float(w) for _, w in sizes)}


def test_cli_medians_score_the_cli_files_at_each_photos_own_size(tools, fake_metrics, tmp_path):
    _, eval_styles = tools
    # two wider than 512 px: the CLI keeps their size, the preview does not
    weights, painting, photos = style_painting_photos(tmp_path, ((600, 46), (520, 22), (30, 42)))
    metrics = eval_styles.load_metrics(fake_metrics)
    medians = eval_styles.cli_medians(metrics, weights, painting, photos, tmp_path / "files", "cpu",
                                      backend="reference")
    assert set(medians) == {"png", "jpg"}
    # Scored as the yardstick scores: heights as loaded at a longer side of 512 (39, 22, 42),
    # widths of the written files (600, 520, 30).
    for fmt, sampling in (("png", 0.0), ("jpg", 1.0)):     # the JPEGs at 4:4:4
        assert medians[fmt] == {"style_ratio": 40.0, "content_dist": 39.0, "palette_dist": sampling,
                                "grid_score": 520.0}
    assert sorted(p.name for p in (tmp_path / "files").iterdir()) == sorted(
        f"photo{i}_w_{fmt}.{fmt}" for i in range(3) for fmt in ("png", "jpg"))
    preview = eval_styles.heldout_medians(metrics, weights, painting, photos)
    assert preview["grid_score"] == 512.0      # what the CLI files correct: every photo at 512 px


@pytest.mark.slow
def test_one_style_trains_and_logs_its_metric(tools, fake_metrics, tmp_path, caplog, monkeypatch):
    train_builtin, _ = tools
    rng = np.random.default_rng(0)
    heldout = []                # small stand-ins for the asset photos (int8 PSNR, samples, metric)
    for i, (w, h) in enumerate(((40, 28), (24, 36))):
        heldout.append(tmp_path / f"heldout{i}.png")
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(heldout[-1])
    monkeypatch.setattr(train_builtin, "default_photos", lambda: list(heldout))
    monkeypatch.setattr(samples, "default_photos", lambda: list(heldout))
    tiny_training_data(tmp_path, rng)
    out = tmp_path / "runs"
    caplog.set_level("INFO", logger="train_builtin")
    argv = ["--styles", "udnie", "--steps", "1", "--batch-size", "2", "--image-size", "16",
            "--device", "cpu", "--no-eval", "--vgg-weights", str(tmp_path / "vgg.pth"),
            "--content-dir", str(tmp_path / "content"), "--paintings-dir", str(tmp_path / "styles"),
            "--out-dir", str(out), "--style-reduction", "frobenius", "--metrics", str(fake_metrics)]
    code = train_builtin.main(argv)
    assert code == 0
    (row,) = json.loads((out / "train_log.json").read_text())
    assert row["settings"]["style_reduction"] == "frobenius" and row["steps"] == 1
    cli = {"style_ratio": 40.0, "content_dist": 32.0, "grid_score": 32.0}
    assert row["metric"] == {"png": {**cli, "palette_dist": 0.0}, "jpg": {**cli, "palette_dist": 1.0}}
    assert row["metric_fp32_512"] == {**cli, "palette_dist": 0.0}
    assert "png metric style_ratio 40.000" in caplog.text and "jpg metric style_ratio 40.000" in caplog.text
    # a later call finds it finished: the file and its row stay as the call that trained it left them
    weights = (out / "int8" / "udnie.safetensors").read_bytes()
    assert train_builtin.main(argv) == 0
    assert json.loads((out / "train_log.json").read_text()) == [row]
    assert (out / "int8" / "udnie.safetensors").read_bytes() == weights
    assert "udnie: finished at step 1 in an earlier call" in caplog.text
