"""Distilling a slim network from a full one: the distill term is the output MSE against the
frozen teacher, and a few steps on it alone move the slim student toward the teacher."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import random_style_state
from PIL import Image

from styleforge.models.checkpoint import load_checkpoint, save_checkpoint
from styleforge.models.transformer_net import SLIM_WIDTH, TransformerNet
from styleforge.models.vgg import VGG16Features
from styleforge.training import TrainConfig, Trainer
from styleforge.training.losses import loss_terms, style_targets


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("distil")
    rng = np.random.default_rng(1)
    (root / "content").mkdir()
    for i in range(6):
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(root / "content" / f"p{i}.png")
    Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(root / "painting.png")
    torch.manual_seed(0)
    torch.save(VGG16Features((8, 16, 16, 16)).state_dict(), root / "vgg.pth")
    save_checkpoint(root / "teacher.safetensors", random_style_state(5), {"style": "teacher"}, dtype=torch.float32)
    return root


def test_distill_term_is_the_output_mse_against_the_teacher():
    torch.manual_seed(0)
    vgg = VGG16Features((8, 16, 16, 16)).eval()
    student, teacher = TransformerNet(SLIM_WIDTH), TransformerNet()
    teacher.load_state_dict(random_style_state(2))
    x = torch.rand(2, 3, 16, 16) * 255
    targets = style_targets(vgg, torch.rand(1, 3, 16, 16) * 255)
    terms = loss_terms(student, vgg, x, targets, False, None, teacher=teacher.eval())
    with torch.no_grad():
        want = ((student(x) - teacher(x).clamp(0, 255)) / 255).pow(2).mean()
    assert terms.distill.item() == pytest.approx(want.item(), rel=1e-5)
    assert loss_terms(student, vgg, x, targets, False).distill.item() == 0


def test_distill_needs_a_teacher():
    with pytest.raises(ValueError, match="needs a teacher"):
        TrainConfig(distill_weight=1.0)
    with pytest.raises(ValueError, match="model must be one of"):
        TrainConfig(model="tiny")


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_slim_student_moves_toward_the_teacher(toy, tmp_path):
    config = TrainConfig(style_image=str(toy / "painting.png"), content_dir=str(toy / "content"),
                         out=str(tmp_path / "slim.safetensors"), vgg_weights=str(toy / "vgg.pth"),
                         steps=12, batch_size=2, image_size=16, style_size=16, lr=1e-2, log_every=3,
                         checkpoint_every=0, sample_every=0, progress=False, device="cpu",
                         sample_photos=(str(toy / "content" / "p0.png"),), model="slim",
                         teacher=str(toy / "teacher.safetensors"), distill_weight=1.0,
                         content_weight=0.0, style_weight=0.0, slim_init="random")
    result = Trainer(config).run()
    first, last = result.history[0]["distill"], result.history[-1]["distill"]
    assert last < 0.5 * first, (first, last)
    saved = load_checkpoint(result.out)
    assert saved.state_dict["conv1.conv2d.weight"].shape[0] == SLIM_WIDTH
    assert '"teacher": "teacher.safetensors"' in saved.metadata["training"]


@pytest.mark.slow   # two short CPU runs
def test_teacher_init_starts_near_the_teacher_and_is_recorded(toy, tmp_path):
    def run(init: str):
        config = TrainConfig(style_image=str(toy / "painting.png"), content_dir=str(toy / "content"),
                             out=str(tmp_path / f"{init}.safetensors"), vgg_weights=str(toy / "vgg.pth"),
                             steps=1, batch_size=2, image_size=16, style_size=16, log_every=1,
                             checkpoint_every=0, sample_every=0, progress=False, device="cpu",
                             sample_photos=(str(toy / "content" / "p0.png"),), model="slim",
                             teacher=str(toy / "teacher.safetensors"), distill_weight=1.0, slim_init=init)
        result = Trainer(config).run()
        return result.history[0]["distill"], load_checkpoint(result.out).metadata["training"]
    warm, warm_meta = run("teacher")
    cold, cold_meta = run("random")
    assert warm < 0.2 * cold, (warm, cold)
    assert '"slim_init": "teacher"' in warm_meta and '"slim_init": "random"' in cold_meta
