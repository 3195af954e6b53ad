"""`styleforge train` used carelessly: bad inputs are refused before VGG or the photos load, no
run clobbers another's output or checkpoints, a bad --resume file is one line, and the run's
length is estimated and shown as an ETA. Toy sizes (16² crops, a narrow random VGG), CPU."""
import logging
import re

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.cli import main
from styleforge.models.vgg import VGG16Features
from styleforge.training import TrainConfig, train
from styleforge.training import trainer as trainer_module


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy_reliability")
    rng = np.random.default_rng(0)
    (root / "content").mkdir()
    for i in range(4):
        Image.fromarray(rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)).save(root / "content" / f"p{i}.png")
    Image.fromarray(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)).save(root / "painting.png")
    torch.manual_seed(0)
    torch.save(VGG16Features((8, 16, 16, 16)).state_dict(), root / "vgg.pth")
    return root


def config(toy, out, **overrides):
    settings = dict(style_image=str(toy / "painting.png"), content_dir=str(toy / "content"), out=str(out),
                    vgg_weights=str(toy / "vgg.pth"), steps=3, batch_size=2, image_size=16, style_size=24,
                    log_every=1, checkpoint_every=0, sample_every=0, progress=False,
                    sample_photos=(str(toy / "painting.png"),), device="cpu")
    settings.update(overrides)
    return TrainConfig(**settings)


def cli_train(toy, out, *extra, style=None):
    return main(["train", "--style-image", str(style or toy / "painting.png"), "--content-dir",
                 str(toy / "content"), "--out", str(out), "--vgg-weights", str(toy / "vgg.pth"),
                 "--batch-size", "2", "--image-size", "16", "--style-size", "24", "--device", "cpu",
                 "--steps", "2", "--no-progress", "--sample-photo", str(toy / "painting.png"), *extra])


def test_a_bad_style_image_is_refused_before_vgg_and_photos(toy, tmp_path, capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("loaded before the style image was checked")
    monkeypatch.setattr(trainer_module, "load_vgg16", never)
    monkeypatch.setattr(trainer_module, "load_content", never)
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "notes.png").write_text("not a picture")
    (tmp_path / "cut.png").write_bytes((toy / "painting.png").read_bytes()[:60])
    for name, reason in (("empty.jpg", "empty file"), ("notes.png", "not an image"), ("cut.png", "truncated")):
        assert cli_train(toy, tmp_path / "x.safetensors", style=tmp_path / name) == 2
        err = capsys.readouterr().err
        assert name in err and reason in err and "Traceback" not in err


@pytest.mark.parametrize("flags, message", [
    (("--steps", "0"), "steps must be ≥ 1"), (("--image-size", "4"), "at least 16"),
])
def test_settings_that_waste_a_run_are_refused(toy, tmp_path, capsys, flags, message):
    assert cli_train(toy, tmp_path / "x.safetensors", *flags) == 2
    assert message in capsys.readouterr().err


def test_another_runs_output_and_checkpoints_are_kept_unless_overwrite(toy, tmp_path, capsys):
    out = tmp_path / "style.safetensors"
    out.write_bytes(b"someone's weights")
    assert cli_train(toy, out) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err and out.read_bytes() == b"someone's weights"
    other = tmp_path / "fresh.safetensors"
    run_dir = other.with_suffix(".train")
    run_dir.mkdir()
    (run_dir / "step_0009000.pt").write_bytes(b"an earlier run")
    assert cli_train(toy, other) == 2
    err = capsys.readouterr().err
    assert "holds checkpoints of an earlier run" in err and "--resume" in err
    assert (run_dir / "step_0009000.pt").read_bytes() == b"an earlier run"


@pytest.mark.slow
def test_overwrite_replaces_the_earlier_run(toy, tmp_path):
    out = tmp_path / "fresh.safetensors"
    out.write_bytes(b"old weights")
    run_dir = out.with_suffix(".train")
    run_dir.mkdir()
    (run_dir / "step_0009000.pt").write_bytes(b"an earlier run")
    assert cli_train(toy, out, "--overwrite") == 0
    assert [p.name for p in run_dir.glob("step_*.pt")] == ["step_0000002.pt"]
    assert out.read_bytes() != b"old weights"


def test_bad_resume_files_are_one_line(toy, tmp_path, capsys):
    good = tmp_path / "good.pt"
    torch.save({"format": "styleforge-train-state/1", "step": 1}, good)   # right tag, no weights
    (tmp_path / "cut.pt").write_bytes(good.read_bytes()[:40])
    torch.save({"format": "x", "payload": Image.new("RGB", (1, 1))}, tmp_path / "hostile.pt")
    torch.save({"just": torch.zeros(1)}, tmp_path / "foreign.pt")
    Image.new("RGB", (4, 4)).save(tmp_path / "ok.jpg")
    for name, reason in (("cut.pt", "truncated or damaged"), ("hostile.pt", "could run code"),
                         ("ok.jpg", "is an image, not a training checkpoint"),
                         ("foreign.pt", "not a styleforge training checkpoint"),
                         ("good.pt", "damaged or from another version")):
        assert cli_train(toy, tmp_path / f"{name}.safetensors", "--resume", str(tmp_path / name)) == 2
        err = capsys.readouterr().err
        assert reason in err and name in err and "Traceback" not in err


@pytest.mark.slow
def test_the_run_length_is_estimated_and_checkpoints_do_not_collide(toy, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="styleforge")
    result = train(config(toy, tmp_path / "eta.safetensors", steps=4, checkpoint_every=1, keep_checkpoints=2))
    estimate = [r.message for r in caplog.records if "s per step" in r.message]
    assert len(estimate) == 1 and re.search(r"4 steps take about \d+:\d\d:\d\d", estimate[0])
    assert result.steps == 4
    names = sorted(p.name for p in (tmp_path / "eta.train").iterdir())
    assert names == ["samples", "step_0000003.pt", "step_0000004.pt"]      # no temp files left
    assert trainer_module.format_duration(43 * 3600 + 61) == "43:01:01"


def test_an_unwritable_output_is_found_before_training(toy, tmp_path, capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("training started although the output cannot be written")
    monkeypatch.setattr(trainer_module, "load_vgg16", never)
    (tmp_path / "blocker").write_text("a file")
    assert cli_train(toy, tmp_path / "blocker" / "style.safetensors") == 2
    assert "blocker is a file, not a folder" in capsys.readouterr().err


def test_non_finite_settings_are_refused(toy, tmp_path, capsys):
    for flags in (("--lr", "nan"), ("--style-weight", "inf")):
        assert cli_train(toy, tmp_path / "x.safetensors", *flags) == 2
        assert "must be a finite number" in capsys.readouterr().err


@pytest.mark.slow
def test_a_diverging_run_stops_with_one_line(toy, tmp_path, capsys):
    assert cli_train(toy, tmp_path / "x.safetensors", "--style-weight", "1e308", "--content-weight", "1e308") == 2
    err = capsys.readouterr().err
    assert re.search(r"training diverged: the loss became NaN or inf by step \d", err) and "Traceback" not in err
    assert not (tmp_path / "x.safetensors").exists()
