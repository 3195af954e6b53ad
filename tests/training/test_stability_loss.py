"""The training-time stability loss: f(T(x) + n) ≈ T(f(x)), its resampling, and its use by
`styleforge train --stability-weight` on tiny generated data (16² crops, a narrow random VGG)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.cli import build_parser
from styleforge.commands.train import config_from_args
from styleforge.models.vgg import VGG16Features
from styleforge.training import TrainConfig, Trainer, train
from styleforge.training.losses import Perturbation, random_perturbation, stability_loss, transform


def shift_theta(batch: int, dx_px: float, size: int) -> torch.Tensor:
    theta = torch.zeros(batch, 2, 3)
    theta[:, 0, 0] = theta[:, 1, 1] = 1.0
    theta[:, 0, 2] = dx_px * 2 / size
    return theta


def test_transform_identity_and_integer_shift():
    x = torch.rand(2, 3, 12, 12) * 255
    same, mask = transform(x, shift_theta(2, 0.0, 12))
    assert torch.allclose(same, x, atol=1e-3) and mask.all()
    moved, mask = transform(x, shift_theta(2, 1.0, 12))           # samples x + 1
    assert torch.allclose(moved[..., :-1], x[..., 1:], atol=1e-3)
    assert mask[..., :-1].all() and not mask[..., -1].any()


def test_zero_for_a_pixelwise_model_without_noise():
    model = torch.nn.Conv2d(3, 3, 1)                               # commutes with any resampling
    x = torch.rand(2, 3, 16, 16) * 255
    generator = torch.Generator().manual_seed(0)
    p = random_perturbation(2, 16, 16, generator, noise_std=0.0)
    assert stability_loss(model, x, model(x), p).item() < 1e-6
    noisy = Perturbation(p.theta, torch.randn(2, 3, 16, 16, generator=generator) * 10.0)
    loss = stability_loss(torch.nn.Identity(), x.clamp(20, 235), x.clamp(20, 235), noisy)
    assert loss.item() == pytest.approx((10.0 / 255) ** 2, rel=0.15)


def test_random_perturbation_is_bounded_and_seeded():
    a = random_perturbation(64, 32, 32, torch.Generator().manual_seed(5), max_shift=2.0, max_zoom=0.02)
    b = random_perturbation(64, 32, 32, torch.Generator().manual_seed(5), max_shift=2.0, max_zoom=0.02)
    assert torch.equal(a.theta, b.theta) and torch.equal(a.noise, b.noise)
    assert (a.theta[:, 0, 0] - 1).abs().max() <= 0.02
    assert (a.theta[:, :, 2].abs() * 32 / 2).max() <= 2.0 + 1e-5


def test_rotation_is_a_turn_in_pixels_and_leaves_other_runs_unchanged():
    plain = random_perturbation(8, 16, 32, torch.Generator().manual_seed(3))
    zero = random_perturbation(8, 16, 32, torch.Generator().manual_seed(3), max_rotate=0.0)
    assert torch.equal(plain.theta, zero.theta) and torch.equal(plain.noise, zero.noise)
    turned = random_perturbation(256, 16, 32, torch.Generator().manual_seed(3), max_shift=0.0, max_zoom=0.0,
                                 max_rotate=10.0)
    # affine_grid's units are half the width and half the height: back in pixels it is a rotation
    half = torch.diag(torch.tensor([32 / 2, 16 / 2]))
    pixels = half @ turned.theta[:, :, :2] @ torch.linalg.inv(half)
    eye = torch.eye(2).expand_as(pixels)
    assert torch.allclose(pixels @ pixels.transpose(1, 2), eye, atol=1e-5)
    assert torch.allclose(torch.linalg.det(pixels), torch.ones(256), atol=1e-5)
    angles = torch.rad2deg(torch.atan2(pixels[:, 1, 0], pixels[:, 0, 0]))
    assert angles.abs().max() <= 10.0 + 1e-4 and angles.abs().max() > 8.0 and (angles < 0).any()


def test_a_turned_square_image_turns_about_its_centre():
    image = torch.zeros(1, 1, 33, 33)
    image[..., 16, 16:] = 1.0           # a ray from the centre to the right edge
    theta = torch.tensor([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]])     # 90°, as random_perturbation writes it
    out, mask = transform(image, theta)     # each output pixel samples the source turned by theta
    assert out[0, 0, 16, 16] > 0.9 and out[0, 0, :16, 16].sum() > 10 and out[0, 0, 16, 20:].sum() < 0.1
    assert mask.float().mean() > 0.8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("stab")
    rng = np.random.default_rng(0)
    (root / "content").mkdir()
    for i in range(6):
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(root / "content" / f"{i}.png")
    Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(root / "painting.png")
    torch.manual_seed(0)
    torch.save(VGG16Features((4, 8, 8, 8)).state_dict(), root / "vgg.pth")
    return root


def tiny_config(root, out, **overrides) -> TrainConfig:
    settings = dict(style_image=str(root / "painting.png"), content_dir=str(root / "content"), out=str(out),
                    vgg_weights=str(root / "vgg.pth"), steps=4, batch_size=2, image_size=16, style_size=16,
                    lr=1e-2, log_every=2, checkpoint_every=0, sample_every=0, progress=False,
                    sample_photos=(str(root / "painting.png"),), device="cpu", stability_weight=1e4)
    settings.update(overrides)
    return TrainConfig(**settings)


@pytest.mark.slow
def test_training_with_stability_logs_it_and_lowers_it(tiny, tmp_path):
    on = Trainer(tiny_config(tiny, tmp_path / "on.safetensors", stability_weight=1e6))
    off = Trainer(tiny_config(tiny, tmp_path / "off.safetensors", stability_weight=0.0))
    assert off.losses(off.data.batch(0)).stability.item() == 0.0
    for trainer in (on, off):
        for _ in range(12):
            trainer.step()
        trainer.flush_log()
    assert on.history[-1]["stability"] > 0.0 and off.history[-1]["stability"] == 0.0
    probe = on.data.batch(99).float()
    p = random_perturbation(2, 16, 16, torch.Generator().manual_seed(1))

    def measured(trainer):
        with torch.no_grad():
            return stability_loss(trainer.model, probe, trainer.model(probe), p).item()
    assert measured(on) < 0.5 * measured(off)


@pytest.mark.slow
def test_resume_with_stability_is_bit_exact(tiny, tmp_path):
    train(tiny_config(tiny, tmp_path / "a.safetensors", checkpoint_every=2, keep_checkpoints=5))
    train(tiny_config(tiny, tmp_path / "b.safetensors", resume=str(tmp_path / "a.train" / "step_0000002.pt")))
    a = torch.load(tmp_path / "a.train" / "step_0000004.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "b.train" / "step_0000004.pt", weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_cli_flags_reach_the_config():
    args = build_parser().parse_args(["train", "--style-image", "p.jpg", "--content-dir", "d", "--out", "o.safetensors",
                                      "--stability-weight", "2e4", "--stability-shift", "3", "--stability-noise", "0",
                                      "--stability-rotate", "4"])
    cfg = config_from_args(args)
    assert (cfg.stability_weight, cfg.stability_shift, cfg.stability_noise, cfg.stability_zoom) == (2e4, 3.0, 0.0, 0.02)
    assert cfg.stability_rotate == 4.0 and cfg.settings()["stability_rotate"] == 4.0
    with pytest.raises(ValueError, match="stability_weight"):
        TrainConfig(stability_weight=-1.0)
    with pytest.raises(ValueError, match="stability_rotate"):
        TrainConfig(stability_rotate=-1.0)


def test_the_trainer_turns_its_perturbation_when_asked(tiny, tmp_path):
    still = Trainer(tiny_config(tiny, tmp_path / "s.safetensors")).perturbation(4)
    turned = Trainer(tiny_config(tiny, tmp_path / "t.safetensors", stability_rotate=5.0)).perturbation(4)
    assert torch.equal(still.theta[:, 0, 1], torch.zeros(4)) and turned.theta[:, 0, 1].abs().min() > 0
