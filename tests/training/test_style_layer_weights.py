"""`style_layer_weights`: each Gram layer's term times its weight, in both reductions; all 1 is
today's loss bit for bit; checked in TrainConfig, reaches the trainer's loss and the weights'
metadata, and a resume with other weights is refused like one across reductions."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_style_reduction import config, random_case, toy  # noqa: F401  (toy is a fixture)

from styleforge.cli import build_parser
from styleforge.commands.train import config_from_args
from styleforge.models.checkpoint import load_checkpoint
from styleforge.training import TrainConfig, Trainer, train
from styleforge.training.losses import STYLE_LAYERS, gram, style_loss

FACTORS = {"mean": (1, 1, 1, 1), "frobenius": (1, 4, 16, 64)}     # VGG16's widths 64…512


@pytest.mark.parametrize("reduction", ["mean", "frobenius"])
def test_each_layer_is_scaled_by_its_weight(reduction):
    feats, targets = random_case()
    per_layer = [F.mse_loss(gram(getattr(feats, n)), t.expand(3, -1, -1)).item()
                 for n, t in zip(STYLE_LAYERS, targets)]
    weights = (0.5, 2.0, 1.0, 0.25)
    want = sum(w * f * m for w, f, m in zip(weights, FACTORS[reduction], per_layer))
    assert style_loss(feats, targets, reduction, weights).item() == pytest.approx(want, rel=1e-5)
    dropped = sum(f * m for f, m in zip(FACTORS[reduction][:3], per_layer[:3]))
    assert style_loss(feats, targets, reduction, (1, 1, 1, 0)).item() == pytest.approx(dropped, rel=1e-5)
    assert torch.equal(style_loss(feats, targets, reduction, (1, 1, 1, 1)), style_loss(feats, targets, reduction))


@pytest.mark.parametrize("bad", [(1, 1, 1), (1, 1, 1, -0.5), (0, 0, 0, 0), (1, 1, 1, float("nan")), ("a", 1, 1, 1)])
def test_bad_weights_are_refused(bad):
    with pytest.raises(ValueError, match="style_layer_weights"):
        TrainConfig(style_layer_weights=bad)


def test_the_trainer_uses_them_and_records_them(toy, tmp_path):  # noqa: F811
    weights = (1.0, 1.0, 1.0, 0.0)
    trainer = Trainer(config(toy, tmp_path / "w.safetensors", style_reduction="frobenius",
                             style_layer_weights=[1, 1, 1, 0]))
    assert trainer.config.style_layer_weights == weights
    batch = trainer.data.batch(0)
    with torch.no_grad():
        got = trainer.losses(batch).style
        feats = trainer.vgg(trainer.model(batch.float()))
        want = style_loss(feats, trainer.targets, "frobenius", weights)
        full = style_loss(feats, trainer.targets, "frobenius")
    assert got.item() == pytest.approx(want.item(), rel=1e-3)
    assert want.item() < full.item()


def test_a_resume_with_other_weights_is_refused(toy, tmp_path):  # noqa: F811
    train(config(toy, tmp_path / "a.safetensors", style_layer_weights=(1, 1, 1, 0.25), steps=1))
    assert load_checkpoint(tmp_path / "a.safetensors").training_settings()["style_layer_weights"] == [1, 1, 1, 0.25]
    step = tmp_path / "a.train" / "step_0000001.pt"
    with pytest.raises(ValueError, match=r"style_layer_weights \(1.0, 1.0, 1.0, 0.25\)"):
        Trainer(config(toy, tmp_path / "b.safetensors", steps=3, resume=str(step)))
    resumed = Trainer(config(toy, tmp_path / "c.safetensors", steps=3, resume=str(step),
                             style_layer_weights=(1, 1, 1, 0.25)))
    assert resumed.step_count == 1


def test_checkpoints_from_before_the_option_resume_with_all_ones(toy, tmp_path):  # noqa: F811
    train(config(toy, tmp_path / "a.safetensors", steps=1))
    step = tmp_path / "a.train" / "step_0000001.pt"
    state = torch.load(step, weights_only=True)
    del state["config"]["style_layer_weights"]
    torch.save(state, step)
    assert Trainer(config(toy, tmp_path / "b.safetensors", steps=3, resume=str(step))).step_count == 1
    with pytest.raises(ValueError, match="style_layer_weights"):
        Trainer(config(toy, tmp_path / "c.safetensors", steps=3, resume=str(step), style_layer_weights=(2, 1, 1, 1)))


def test_cli_flag_reaches_the_config():
    base = ["train", "--style-image", "p.jpg", "--content-dir", "c", "--out", "o.safetensors"]
    parser = build_parser()
    assert config_from_args(parser.parse_args(base)).style_layer_weights == (1, 1, 1, 1)
    args = parser.parse_args([*base, "--style-layer-weights", "1,1,1,0.25"])
    assert config_from_args(args).style_layer_weights == (1, 1, 1, 0.25)
    with pytest.raises(ValueError, match="style_layer_weights"):
        config_from_args(parser.parse_args([*base, "--style-layer-weights", "1,1"]))
