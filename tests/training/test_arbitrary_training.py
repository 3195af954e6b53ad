"""Arbitrary-style training on the CPU: losses against plain references, batches as a pure
function of the step, one training step + exact resume, and the evaluation metrics."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from styleforge.models.arbitrary import ArbitraryConfig
from styleforge.models.arbitrary.encoder import VGGEncoder
from styleforge.training import arbitrary_losses as L
from styleforge.training.arbitrary_config import ArbitraryTrainConfig
from styleforge.training.arbitrary_data import ArbitraryBatches, group_probabilities, style_group

WIDTHS = (4, 8, 8, 16, 16)
LEVELS = ("relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1")


def feats(seed: int, size: int = 16) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {level: torch.rand(2, c, size >> i, size >> i, generator=g, dtype=torch.float64) * 3
            for i, (level, c) in enumerate(zip(LEVELS, WIDTHS))}


def test_arbitrary_style_and_content_losses_match_plain_formulas():
    a, b = feats(0), feats(1)
    def std(f):
        return (f.var((2, 3), correction=0) + 1e-5).sqrt()
    want = sum(F.mse_loss(a[k].mean((2, 3)), b[k].mean((2, 3))) + F.mse_loss(std(a[k]), std(b[k])) for k in LEVELS)
    torch.testing.assert_close(L.style_loss(a, b), want)
    norm = lambda x: (x - x.mean((2, 3), keepdim=True)) / (x.var((2, 3), keepdim=True, correction=0) + 1e-5).sqrt()  # noqa: E731
    want = sum(F.mse_loss(norm(a[k]), norm(b[k])) for k in ("relu4_1", "relu5_1"))
    torch.testing.assert_close(L.content_loss(a, b), want)
    assert float(L.content_loss(a, a)) == 0.0


def test_arbitrary_local_target_is_parameter_free_adaattn():
    a, b = feats(2), feats(3)
    targets = L.local_targets(a, b, levels=("relu3_1",), max_style_tokens=10_000)
    norm = lambda x: (x - x.mean((2, 3), keepdim=True)) / (x.var((2, 3), keepdim=True, correction=0) + 1e-5).sqrt()  # noqa: E731
    keys = lambda f: torch.cat([norm(F.adaptive_avg_pool2d(f[k], f["relu3_1"].shape[-2:]))  # noqa: E731
                                for k in ("relu1_1", "relu2_1", "relu3_1")], 1).flatten(2)
    attn = torch.softmax(keys(a).transpose(1, 2) @ keys(b), dim=-1)                 # (B, Nc, Ns)
    v = b["relu3_1"].flatten(2).transpose(1, 2)
    m = attn @ v
    s = (attn @ (v * v) - m * m).clamp_min(0).sqrt()
    want = (s * norm(a["relu3_1"]).flatten(2).transpose(1, 2) + m).transpose(1, 2).reshape(a["relu3_1"].shape)
    torch.testing.assert_close(targets["relu3_1"].double(), want, rtol=1e-4, atol=2e-3)


def test_arbitrary_batches_pure_in_step_and_grouped():
    photos = (torch.rand(5, 3, 40, 40) * 255).to(torch.uint8)
    paintings = [(torch.rand(3, 30 + i, 50) * 255).to(torch.uint8) for i in range(6)]
    groups = ["big"] * 4 + ["x", "y"]
    data = ArbitraryBatches(photos, paintings, groups, batch_size=3, image_size=32, seed=7)
    p1, s1 = data.batch(11)
    p2, s2 = data.batch(11)
    assert torch.equal(p1, p2) and torch.equal(s1, s2) and s1.shape == (3, 3, 32, 32)
    assert not torch.equal(data.batch(12)[1], s1)
    names, probs, _ = group_probabilities(groups, 0.5)
    assert names == ["big", "x", "y"]
    torch.testing.assert_close(probs, torch.tensor([2.0, 1.0, 1.0], dtype=torch.float64) / 4)


def test_arbitrary_style_group_names(tmp_path):
    assert style_group(tmp_path / "wesnoth-data_0012.jpg", tmp_path).endswith("/wesnoth-data")
    assert style_group(tmp_path / "famous" / "udnie.jpg", tmp_path).endswith("/famous")


def _trainer(tmp_path, steps, resume=None):
    from styleforge.training.arbitrary_trainer import ArbitraryTrainer
    torch.manual_seed(0)
    photos = (torch.rand(4, 3, 40, 40, generator=torch.Generator().manual_seed(1)) * 255).to(torch.uint8)
    paintings = [(torch.rand(3, 40, 48, generator=torch.Generator().manual_seed(i)) * 255).to(torch.uint8)
                 for i in range(3)]
    cfg = ArbitraryTrainConfig(run_dir=str(tmp_path / "run"), steps=steps, batch_size=1, image_size=32,
                               content_size=40, warmup=1, model=ArbitraryConfig(heads=2, qk_dim=4, widths=WIDTHS,
                                                                                max_style_tokens=8),
                               sample_every=0, checkpoint_every=0, log_every=1, progress=False,
                               device="cpu", resume=resume)
    encoder = VGGEncoder(WIDTHS)
    torch.manual_seed(5)
    for p in encoder.parameters():
        torch.nn.init.normal_(p, 0.0, 0.3) if p.dim() == 4 else torch.nn.init.uniform_(p, 0.0, 0.1)
    return ArbitraryTrainer(cfg, photos=photos, paintings=paintings, groups=["a", "a", "b"],
                            encoder_state=encoder.state_dict())


@pytest.mark.slow
def test_arbitrary_training_step_and_exact_resume(tmp_path):
    first = _trainer(tmp_path, steps=3)
    first.step()
    first.step()
    first.save_state()
    third = first.step()
    resumed = _trainer(tmp_path, steps=3, resume="auto")
    assert resumed.step_count == 2
    torch.testing.assert_close(resumed.step(), third)
    assert torch.isfinite(third).all()
    result = resumed.run()      # nothing left to train: writes the final state, samples, weights
    assert result.out.is_file() and (tmp_path / "run" / "samples").is_dir()


def test_arbitrary_eval_metrics_identity():
    from styleforge.models.vgg import VGG16Features
    from styleforge.training.arbitrary_eval import metrics
    torch.manual_seed(0)
    vgg = VGG16Features((4, 8, 8, 8)).eval()
    photo, painting = torch.rand(1, 3, 32, 32) * 255, torch.rand(1, 3, 32, 40) * 255
    ratio, dist = metrics(vgg, photo, photo, painting)
    assert ratio == pytest.approx(1.0) and dist == 0.0
    ratio, dist = metrics(vgg, photo, painting[..., :32, :32], painting)
    assert ratio < 1.0 and dist > 0.0


def test_arbitrary_gram_loss_matches_float64_formula():
    a, b = feats(4), feats(5)

    def gram(x):
        n, c, h, w = x.shape
        f = x.reshape(n, c, h * w)
        return f @ f.transpose(1, 2) / (c * h * w)

    want = sum(((gram(a[k]) - gram(b[k])) ** 2).sum((1, 2)).mean() for k in LEVELS[:4])
    torch.testing.assert_close(L.gram_loss(a, b), want)
    assert float(L.gram_loss(a, a)) == 0.0
