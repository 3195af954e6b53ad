"""`style_reduction`: "frobenius" sums each layer's squared Gram differences over C×C and divides
by the first layer's C², so it is the mean times (C_l / C_1)² per layer; "mean" stays
pytorch/examples' loss. The option is validated, reaches the loss (eager and compiled), the CLI,
the catalogue and the weights' metadata, and a resume across reductions is refused."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from styleforge.cli import build_parser
from styleforge.commands.train import config_from_args
from styleforge.models.checkpoint import load_checkpoint
from styleforge.models.vgg import VGG16Features, VGGFeatures
from styleforge.training import TrainConfig, Trainer, train
from styleforge.training.catalogue import BuiltinStyle
from styleforge.training.losses import STYLE_LAYERS, gram, style_distance, style_loss, style_targets

WIDTHS = (64, 128, 256, 512)        # VGG16's: the factors are ×1, ×4, ×16, ×64


def random_case(widths=WIDTHS, batch=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    feats = VGGFeatures(*(torch.rand(batch, c, 7, 5, generator=g) for c in widths))
    targets = tuple(gram(torch.rand(1, c, 9, 6, generator=g)) for c in widths)
    return feats, targets


def test_frobenius_is_the_mean_times_the_layer_factors():
    feats, targets = random_case()
    per_layer = [F.mse_loss(gram(getattr(feats, n)), t.expand(3, -1, -1)) for n, t in zip(STYLE_LAYERS, targets)]
    factors = [(c / WIDTHS[0]) ** 2 for c in WIDTHS]
    assert factors == [1, 4, 16, 64]
    mean, frob = style_loss(feats, targets, "mean"), style_loss(feats, targets, "frobenius")
    assert torch.equal(mean, sum(per_layer))            # the default is today's loss, bit for bit
    assert frob.item() == pytest.approx(sum(f * m.item() for f, m in zip(factors, per_layer)), rel=1e-5)
    # Johnson et al.'s squared Frobenius norm, batch mean, ÷ 64², in float64.
    reference = sum(torch.linalg.matrix_norm(gram(getattr(feats, n).double()) - t.double()).pow(2).mean()
                    for n, t in zip(STYLE_LAYERS, targets)) / WIDTHS[0] ** 2
    assert frob.item() == pytest.approx(reference.item(), rel=1e-5)


def test_only_the_first_layer_sets_the_divisor():
    feats, targets = random_case(widths=(8, 16, 16, 32), seed=1)
    frob, mean = style_loss(feats, targets, "frobenius"), style_loss(feats, targets, "mean")
    per_layer = [F.mse_loss(gram(getattr(feats, n)), t.expand(3, -1, -1)).item()
                 for n, t in zip(STYLE_LAYERS, targets)]
    assert frob.item() == pytest.approx(per_layer[0] + 4 * per_layer[1] + 4 * per_layer[2] + 16 * per_layer[3],
                                        rel=1e-5)
    assert frob.item() > mean.item()


def test_unknown_reduction_is_refused():
    feats, targets = random_case(widths=(4, 4, 4, 4))
    with pytest.raises(ValueError, match="frobenius"):
        style_loss(feats, targets, "sum")
    with pytest.raises(ValueError, match="style_reduction must be one of"):
        TrainConfig(style_reduction="Frobenius")


def test_style_distance_follows_the_reduction_per_image():
    torch.manual_seed(0)
    vgg = VGG16Features((8, 16, 32, 32)).eval()
    images = torch.rand(2, 3, 24, 20) * 255
    targets = style_targets(vgg, torch.rand(1, 3, 28, 28) * 255)
    with torch.no_grad():
        feats = vgg(images)
        default = style_distance(vgg, images, targets)
        frob = style_distance(vgg, images, targets, reduction="frobenius")
        for i in range(2):
            one = VGGFeatures(*(f[i:i + 1] for f in feats))
            assert default[i].item() == pytest.approx(style_loss(one, targets, "mean").item(), rel=1e-5)
            assert frob[i].item() == pytest.approx(style_loss(one, targets, "frobenius").item(), rel=1e-5)
    with pytest.raises(ValueError):
        style_distance(vgg, images, targets, reduction="max")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("reduction")
    rng = np.random.default_rng(3)
    (root / "content").mkdir()
    for i in range(4):
        Image.fromarray(rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)).save(root / "content" / f"p{i}.png")
    Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(root / "painting.png")
    torch.manual_seed(0)
    # Conv kernels ×2.5 so activations keep their size with depth, as a trained VGG's do; at
    # PyTorch's init each conv shrinks them and the deep layers' Gram terms all but vanish.
    state = {k: v * 2.5 if v.dim() == 4 and k.endswith("weight") else v
             for k, v in VGG16Features((8, 16, 32, 32)).state_dict().items()}
    torch.save(state, root / "vgg.pth")
    return root


def config(toy, out, **overrides) -> TrainConfig:
    settings = dict(style_image=str(toy / "painting.png"), content_dir=str(toy / "content"), out=str(out),
                    vgg_weights=str(toy / "vgg.pth"), steps=2, batch_size=2, image_size=16, style_size=24,
                    log_every=1, checkpoint_every=0, sample_every=0, progress=False, device="cpu",
                    sample_photos=(str(toy / "painting.png"),), compile=False)
    settings.update(overrides)
    return TrainConfig(**settings)


def test_trainer_uses_the_configured_reduction(toy, tmp_path):
    trainer = Trainer(config(toy, tmp_path / "f.safetensors", style_reduction="frobenius"))
    batch = trainer.data.batch(0)
    with torch.no_grad():
        got = trainer.losses(batch).style
        feats = trainer.vgg(trainer.model(batch.float()))
        want, mean = (style_loss(feats, trainer.targets, r) for r in ("frobenius", "mean"))
    assert got.item() == pytest.approx(want.item(), rel=1e-3)
    assert want.item() > 1.2 * mean.item()      # deeper layers (16, 32 channels) weigh 4× and 16×


@pytest.mark.slow
def test_compiled_loss_follows_the_reduction(toy, tmp_path):
    eager = Trainer(config(toy, tmp_path / "e.safetensors", style_reduction="frobenius"))
    compiled = Trainer(config(toy, tmp_path / "c.safetensors", style_reduction="frobenius", compile=True))
    batch = eager.data.batch(0)
    with torch.no_grad():       # the forward graph is what the reduction changes; skips compiling a backward
        want = eager.losses(batch).style.item()
        assert compiled.losses(batch).style.item() == pytest.approx(want, rel=1e-4)


def test_setting_is_recorded_and_a_resume_across_reductions_is_refused(toy, tmp_path):
    train(config(toy, tmp_path / "a.safetensors", style_reduction="frobenius", steps=1))
    meta = load_checkpoint(tmp_path / "a.safetensors")
    assert meta.training_settings()["style_reduction"] == "frobenius"
    step = tmp_path / "a.train" / "step_0000001.pt"
    with pytest.raises(ValueError, match="style_reduction 'frobenius'.*'mean'"):
        Trainer(config(toy, tmp_path / "b.safetensors", steps=3, resume=str(step)))
    resumed = Trainer(config(toy, tmp_path / "c.safetensors", steps=3, resume=str(step),
                             style_reduction="frobenius"))
    assert resumed.step_count == 1


def test_checkpoints_from_before_the_option_resume_as_mean(toy, tmp_path):
    train(config(toy, tmp_path / "a.safetensors", steps=1))
    step = tmp_path / "a.train" / "step_0000001.pt"
    state = torch.load(step, weights_only=True)
    del state["config"]["style_reduction"]
    torch.save(state, step)
    assert Trainer(config(toy, tmp_path / "b.safetensors", steps=3, resume=str(step))).step_count == 1
    with pytest.raises(ValueError, match="style_reduction 'mean'"):
        Trainer(config(toy, tmp_path / "c.safetensors", steps=3, resume=str(step), style_reduction="frobenius"))


def test_cli_flag_reaches_the_config():
    base = ["train", "--style-image", "p.jpg", "--content-dir", "c", "--out", "o.safetensors"]
    parser = build_parser()
    assert config_from_args(parser.parse_args(base)).style_reduction == "mean"
    args = parser.parse_args([*base, "--style-reduction", "frobenius"])
    assert config_from_args(args).style_reduction == "frobenius"
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--style-reduction", "sum"])


def test_a_catalogue_tweak_sets_it_like_a_style_weight():
    style = BuiltinStyle("x", "x.jpg", "X", "someone", "", "public domain",
                         {"style_reduction": "frobenius", "style_weight": 5e8})
    cfg = style.config("paintings")
    assert (cfg.style_reduction, cfg.style_weight) == ("frobenius", 5e8)
    assert cfg.settings()["style_reduction"] == "frobenius"
    assert style.config("paintings", style_reduction="mean").style_reduction == "mean"
