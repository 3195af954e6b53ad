"""`jpeg_style`: the style term partly computed on a differentiable JPEG round trip of the output.

The proxy (`training/jpeg.py`) follows Pillow's q95 4:4:4 files closely, removes grain under half
a quantisation step and keeps grain above it; off (0, the default) the loss is today's bit for
bit; on, the term is the designed mix and reaches the trainer and the weights' metadata."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from test_style_reduction import config, toy  # noqa: F401  (toy is a fixture)

from styleforge.models.checkpoint import load_checkpoint
from styleforge.training import TrainConfig, Trainer, train
from styleforge.training.jpeg import BLOCK, dct_matrix, jpeg_proxy, quant_tables
from styleforge.training.losses import loss_terms, style_loss


def pillow_round_trip(image: np.ndarray, quality: int = 95) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, "JPEG", quality=quality, subsampling=0)
    return np.asarray(Image.open(buf).convert("RGB")).astype(np.float64)


def as_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)[None].float()


def grain(coefficient: float, size: int = 64) -> torch.Tensor:
    """Grey 128 plus, in every 8×8 block, the luminance DCT basis (7, 7) × `coefficient`: the
    finest grain JPEG codes, quantised at q95 with a step of 10 (the table's 99 × 0.1)."""
    d = dct_matrix(torch.device("cpu"))
    block = torch.outer(d[7], d[7]) * coefficient
    plane = 128 + block.repeat(size // BLOCK, size // BLOCK)
    return plane.expand(1, 3, size, size).clone()


def test_q95_tables_are_libjpegs():
    tables = quant_tables(95)
    assert tables[0, 0, 0] == 2 and tables[0, 7, 7] == 10 and tables[1, 0, 0] == 2 and tables[1, 7, 7] == 10
    assert torch.equal(quant_tables(50)[0, 0], torch.tensor([16.0, 11, 10, 16, 24, 40, 51, 61]))
    with pytest.raises(ValueError, match="quality"):
        quant_tables(0)


@pytest.mark.parametrize("shape", [(64, 64), (37, 50)], ids=["blocks", "partial_blocks"])
def test_the_proxy_follows_pillows_jpeg(shape):
    rng = np.random.default_rng(0)
    y, x = np.mgrid[:shape[0], :shape[1]]
    smooth = np.stack([100 + 60 * np.sin(x / 7 + c) * np.cos(y / 5) for c in range(3)], -1)
    image = np.clip(smooth + rng.normal(0, 3, smooth.shape), 0, 255).round().astype(np.uint8)
    jpeg = pillow_round_trip(image)
    proxy = jpeg_proxy(as_tensor(image))[0].permute(1, 2, 0).numpy()
    own_change = np.sqrt(((jpeg - image) ** 2).mean())
    assert own_change > 0.5                                    # q95 does change this image
    assert np.sqrt(((proxy - jpeg) ** 2).mean()) < 0.6 * own_change


def test_grain_under_half_a_step_is_removed_and_coarser_grain_kept():
    faint, strong = grain(3.0), grain(40.0)                    # steps of 10: 0.3 and 4 steps
    energy = lambda x: (x - 128).pow(2).mean().item()         # noqa: E731
    assert energy(jpeg_proxy(faint)) < 0.1 * energy(faint)
    assert energy(jpeg_proxy(strong)) == pytest.approx(energy(strong), rel=0.1)


def test_the_gradient_passes_straight_through():
    x = grain(3.0).requires_grad_()
    jpeg_proxy(x).sum().backward()
    assert torch.allclose(x.grad, torch.ones_like(x.grad), atol=1e-4)


def test_off_is_todays_loss_bit_for_bit(toy, tmp_path):  # noqa: F811
    trainer = Trainer(config(toy, tmp_path / "w.safetensors"))
    assert trainer.config.jpeg_style == 0.0
    batch = trainer.data.batch(0).float()
    args = (trainer.model, trainer.vgg, batch, trainer.targets, False)
    with torch.no_grad():
        default = loss_terms(*args)
        explicit = loss_terms(*args, jpeg_style=0.0)
        want = style_loss(trainer.vgg(trainer.model(batch)), trainer.targets)
    assert torch.equal(default.style, explicit.style) and torch.equal(default.style, want)
    assert torch.equal(trainer.losses(trainer.data.batch(0)).style, default.style)


def test_on_is_the_designed_mix_and_grain_earns_nothing(toy, tmp_path):  # noqa: F811
    trainer = Trainer(config(toy, tmp_path / "w.safetensors", jpeg_style=0.5))
    batch = trainer.data.batch(0)
    with torch.no_grad():
        got = trainer.losses(batch).style
        out = trainer.model(batch.float())
        plain = style_loss(trainer.vgg(out), trainer.targets)
        degraded = style_loss(trainer.vgg(jpeg_proxy(out)), trainer.targets)
        # Faint grain moves the plain style loss but not the proxy's: the proxy removed it.
        flat, faint = grain(0.0, 16), grain(3.0, 16)
        seen = [style_loss(trainer.vgg(x), trainer.targets) for x in (flat, faint)]
        after = [style_loss(trainer.vgg(jpeg_proxy(x)), trainer.targets) for x in (flat, faint)]
    assert got.item() == pytest.approx(0.5 * plain.item() + 0.5 * degraded.item(), rel=1e-4)
    assert not torch.isclose(plain, degraded)
    assert abs(after[1] - after[0]).item() < 0.1 * abs(seen[1] - seen[0]).item()


def test_checked_and_recorded(toy, tmp_path):  # noqa: F811
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="jpeg_style"):
            TrainConfig(jpeg_style=bad)
    with pytest.raises(ValueError, match="jpeg_quality"):
        TrainConfig(jpeg_quality=101)
    train(config(toy, tmp_path / "a.safetensors", jpeg_style=0.5, steps=1))
    settings = load_checkpoint(tmp_path / "a.safetensors").training_settings()
    assert (settings["jpeg_style"], settings["jpeg_quality"]) == (0.5, 95)


def test_the_cli_flags_reach_the_config():
    from styleforge.cli import build_parser
    from styleforge.commands.train import config_from_args
    args = build_parser().parse_args(["train", "--style-image", "p.jpg", "--content-dir", "c", "--out",
                                      "w.safetensors", "--jpeg-style", "0.5", "--jpeg-quality", "90"])
    cfg = config_from_args(args)
    assert (cfg.jpeg_style, cfg.jpeg_quality) == (0.5, 90)


def test_autocast_does_not_reach_the_dct():
    x = grain(40.0).bfloat16()          # as the style network's output under CUDA autocast
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = jpeg_proxy(x)
    assert got.dtype == torch.float32 and torch.equal(got, jpeg_proxy(x.float()))
