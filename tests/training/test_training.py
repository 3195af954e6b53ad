"""Training on the CPU at toy size: the loss falls, resume is bit-exact, the CLI and errors work.

Everything is generated: photos (smooth colour fields with noise), a striped "painting", and a
narrow random VGG16 saved in torchvision's key layout. Crops are 32² in the loss test and 16²
elsewhere, so the file runs in seconds.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import rel_error
from PIL import Image
from safetensors import safe_open

from styleforge.cli import main
from styleforge.models.checkpoint import load_checkpoint
from styleforge.models.vgg import VGG16Features, VGGWeightsError
from styleforge.training import TrainConfig, Trainer, train
from styleforge.training.benchmark import measure_training_throughput
from styleforge.training.catalogue import BUILTIN_STYLES
from styleforge.training.data import ContentBatches
from styleforge.training.evaluate import evaluate_style, summarise
from styleforge.training.losses import gram


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    rng = np.random.default_rng(0)
    (root / "content").mkdir()
    yy, xx = np.mgrid[0:40, 0:48] / 40.0
    for i in range(10):
        base = np.stack([np.sin(xx * (i + 1)), np.cos(yy * (i + 2)), xx * yy], -1) * 100 + 120
        photo = np.clip(base + rng.normal(0, 10, base.shape), 0, 255).astype(np.uint8)
        Image.fromarray(photo).save(root / "content" / f"photo_{i}.png")
    stripes = np.zeros((48, 64, 3), np.uint8)
    stripes[:, :, 0] = ((np.arange(64) // 4) % 2 * 255)[None, :]
    stripes[:, :, 2] = ((np.arange(48) // 6) % 2 * 200)[:, None]
    Image.fromarray(stripes).save(root / "painting.png")
    Image.fromarray(rng.integers(0, 255, (20, 28, 3), dtype=np.uint8)).save(root / "sample.png")
    torch.manual_seed(0)
    torch.save(VGG16Features((8, 16, 16, 16)).state_dict(), root / "vgg.pth")
    return root


SHARED_STYLES = Path(__file__).resolve().parents[3] / "shared" / "data" / "styles"   # beside the checkout


def config(toy: Path, out: Path, **overrides) -> TrainConfig:
    settings = dict(style_image=str(toy / "painting.png"), content_dir=str(toy / "content"), out=str(out),
                    vgg_weights=str(toy / "vgg.pth"), steps=6, batch_size=2, image_size=16, style_size=24,
                    lr=1e-2, log_every=2, checkpoint_every=0, sample_every=0, progress=False,
                    sample_photos=(str(toy / "sample.png"),), device="cpu",
                    metadata={"painting": "Stripes", "artist": "a test", "licence": "public domain"})
    settings.update(overrides)
    return TrainConfig(**settings)


@pytest.mark.slow
def test_loss_falls_and_weights_are_written(toy, tmp_path):
    out = tmp_path / "stripes.safetensors"
    result = train(config(toy, out, steps=16, image_size=32, style_size=48, log_every=4))
    first, last = result.history[0], result.history[-1]
    assert all(math.isfinite(row["total"]) for row in result.history)
    assert last["total"] < 0.7 * first["total"], (first, last)
    assert last["style"] < first["style"]
    with safe_open(str(out), framework="pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    meta = load_checkpoint(out).metadata
    assert meta["style"] == "stripes" and meta["painting"] == "Stripes" and meta["licence"] == "public domain"
    assert meta["steps"] == "16"
    settings = json.loads(meta["training"])
    assert settings["style_size"] == 48 and settings["style_image"] == "painting.png"
    assert json.loads(meta["final_losses"])["total"] == pytest.approx(last["total"])
    assert (tmp_path / "stripes.train" / "samples" / "step_0000016.png").is_file()


@pytest.mark.slow
def test_resume_is_bit_exact(toy, tmp_path):
    full = config(toy, tmp_path / "a.safetensors", steps=6, checkpoint_every=3, keep_checkpoints=5)
    train(full)
    run_a = tmp_path / "a.train"
    halfway = run_a / "step_0000003.pt"
    state = torch.load(halfway, map_location="cpu", weights_only=True)
    assert state["step"] == 3 and "optimizer" in state and "rng" in state
    train(config(toy, tmp_path / "b.safetensors", steps=6, resume=str(halfway)))
    a = torch.load(run_a / "step_0000006.pt", weights_only=True)
    b = torch.load(tmp_path / "b.train" / "step_0000006.pt", weights_only=True)
    assert a["model"].keys() == b["model"].keys()
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    exp_a = a["optimizer"]["state"][0]["exp_avg_sq"]
    assert torch.equal(exp_a, b["optimizer"]["state"][0]["exp_avg_sq"])


@pytest.mark.slow
def test_seed_determines_the_run(toy, tmp_path):
    runs = [Trainer(config(toy, tmp_path / f"{i}.safetensors", seed=s)) for i, s in enumerate((3, 3, 4))]
    for trainer in runs:
        for _ in range(2):
            trainer.step()
    w = [t.model.conv1.conv2d.weight for t in runs]
    assert torch.equal(w[0], w[1]) and not torch.equal(w[0], w[2])


def test_batches_are_a_function_of_the_step():
    images = torch.arange(10, dtype=torch.uint8).view(10, 1, 1, 1).expand(10, 3, 4, 4).contiguous()
    a = ContentBatches(images, batch_size=3, seed=7, device=torch.device("cpu"))
    b = ContentBatches(images, batch_size=3, seed=7, device=torch.device("cpu"))
    order = [a.batch(s) for s in range(7)]
    assert torch.equal(b.batch(5), order[5]) and torch.equal(b.batch(1), order[1])
    epoch0 = torch.cat(order[:3])[:, 0, 0, 0]
    assert len(set(epoch0.tolist())) == 9           # 3 batches of 3 distinct photos per epoch


def test_gram_channels_last_equals_contiguous():
    x = torch.randn(2, 16, 9, 7)
    ref = torch.einsum("nchw,ndhw->ncd", x.double(), x.double()) / (16 * 9 * 7)
    for variant in (x, x.contiguous(memory_format=torch.channels_last)):
        assert rel_error(gram(variant), ref) < 1e-5


def test_cli_trains(toy, tmp_path):
    out = tmp_path / "cli.safetensors"
    code = main(["train", "--style-image", str(toy / "painting.png"), "--content-dir", str(toy / "content"),
                 "--out", str(out), "--vgg-weights", str(toy / "vgg.pth"), "--steps", "2",
                 "--batch-size", "2", "--image-size", "16", "--style-size", "24", "--device", "cpu",
                 "--sample-photo", str(toy / "sample.png"), "--no-progress", "--name", "cli_style",
                 "--licence", "public domain"])
    assert code == 0
    meta = load_checkpoint(out).metadata
    assert meta["style"] == "cli_style" and meta["steps"] == "2"


def test_missing_vgg_weights_is_a_clear_error(toy, tmp_path, capsys):
    missing = tmp_path / "no_vgg.pth"
    with pytest.raises(VGGWeightsError, match="--vgg-weights"):
        train(config(toy, tmp_path / "x.safetensors", vgg_weights=str(missing)))
    code = main(["train", "--style-image", str(toy / "painting.png"), "--content-dir", str(toy / "content"),
                 "--out", str(tmp_path / "x.safetensors"), "--vgg-weights", str(missing), "--device", "cpu"])
    assert code == 2
    assert "IMAGENET1K_V1" in capsys.readouterr().err


def test_bad_settings_are_refused(toy, tmp_path):
    with pytest.raises(ValueError, match="multiple of 4"):
        config(toy, tmp_path / "x.safetensors", image_size=30)
    with pytest.raises(ValueError, match=".safetensors"):
        config(toy, tmp_path / "x.pth").check_paths()


@pytest.mark.slow
def test_evaluate_scores_a_trained_style(toy, tmp_path):
    out = tmp_path / "eval.safetensors"
    train(config(toy, out, steps=12))
    vgg = VGG16Features((8, 16, 16, 16))
    vgg.load_state_dict(torch.load(toy / "vgg.pth", weights_only=True))
    scores = evaluate_style("eval", out, toy / "painting.png", [toy / "sample.png"], vgg.eval(), device="cpu")
    assert len(scores) == 1 and scores[0].photo_loss > 0 and math.isfinite(scores[0].ratio)
    assert scores[0].ratio < 1.0              # the trained output is closer to the stripes than noise is
    assert summarise(scores)[0]["ratio"] == pytest.approx(scores[0].ratio)


@pytest.mark.slow
def test_benchmark_runs_on_cpu():
    row = measure_training_throughput(device="cpu", batch_size=1, image_size=16, steps=2, warmup=1)
    assert row["images_per_s"] > 0 and row["ms_per_step"] > 0 and row["loss_finite"]


def test_catalogue_matches_the_sources():
    names = [s.name for s in BUILTIN_STYLES]
    assert names[:9] == ["candy", "mosaic", "udnie", "rain_princess", "starry_night", "great_wave",
                         "the_scream", "composition_vii", "shipwreck"]
    assert len(names) == len(set(names)) == 14
    assert {s.licence for s in BUILTIN_STYLES} <= {"unclear", "in copyright", "public domain"}
    shared = [s for s in BUILTIN_STYLES if not s.source]
    added = [s for s in BUILTIN_STYLES if s.source]
    assert len(added) == 5 and all(s.licence == "public domain" and s.source_licence for s in added)
    if SHARED_STYLES.is_dir():
        assert all((SHARED_STYLES / s.painting_file).is_file() for s in shared)


def test_catalogue_config_layers_recipe_tweaks_and_settings():
    from styleforge.training.catalogue import RECIPE, get
    udnie = get("udnie").config("paintings", content_dir="c", steps=7)
    assert udnie.style_weight == 5e10 and udnie.grid_weight == RECIPE["grid_weight"] and udnie.steps == 7
    assert udnie.style_image == str(Path("paintings") / "udnie.jpg")
    assert get("udnie").config("p", recipe=False).grid_weight == 0.0
    assert get("dendera").metadata()["source_licence"].startswith("GPL-2+")


def test_shipped_weights_carry_the_catalogue_fields():
    from safetensors import safe_open

    from styleforge.models.registry import STYLES_DIR
    shipped = [s for s in BUILTIN_STYLES if (STYLES_DIR / f"{s.name}.safetensors").is_file()]
    assert len(shipped) >= 9
    for style in shipped:
        with safe_open(str(STYLES_DIR / f"{style.name}.safetensors"), "pt") as handle:
            meta = handle.metadata()
        assert {k: meta.get(k) for k in style.metadata()} == style.metadata(), style.name
