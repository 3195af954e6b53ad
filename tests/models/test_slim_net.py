"""The slim (half-width) style network: same names as the full one, its own shapes, found by
the checkpoint rules from the shapes alone, and looked up under styles/slim/ by `--model slim`."""
from __future__ import annotations

import pytest
import torch

from styleforge.models.checkpoint import CheckpointError, build_model, load_checkpoint, save_checkpoint
from styleforge.models.registry import resolve_style
from styleforge.models.transformer_net import SLIM_WIDTH, TransformerNet, count_flops


def test_slim_has_the_full_names_and_a_quarter_of_the_work():
    full, slim = TransformerNet().state_dict(), TransformerNet(SLIM_WIDTH).state_dict()
    assert list(full) == list(slim)
    assert slim["res1.conv1.conv2d.weight"].shape == (64, 64, 3, 3)
    assert full["res1.conv1.conv2d.weight"].shape == (128, 128, 3, 3)
    ratio = count_flops(512, 512, channels=SLIM_WIDTH) / count_flops(512, 512)
    assert 0.25 < ratio < 0.28            # 3×3 layers scale by 1/4, the 9×9 ends by 1/2


def test_slim_weights_round_trip_and_build_the_slim_network(tmp_path):
    torch.manual_seed(0)
    net = TransformerNet(SLIM_WIDTH).eval()
    path = save_checkpoint(tmp_path / "s.safetensors", net.state_dict(), {"style": "s"}, dtype=torch.float32)
    model = build_model(load_checkpoint(path))
    assert model.width == SLIM_WIDTH
    x = torch.rand(1, 3, 32, 48) * 255
    with torch.no_grad():
        assert torch.equal(model(x), net(x))


def test_a_mixed_width_file_is_refused(tmp_path):
    state = TransformerNet(SLIM_WIDTH).state_dict()
    state["res1.conv1.conv2d.weight"] = torch.zeros(128, 128, 3, 3)
    with pytest.raises(CheckpointError, match="res1.conv1.conv2d.weight has shape"):
        save_checkpoint(tmp_path / "bad.safetensors", state)


def test_model_slim_finds_the_slim_file_or_says_there_is_none(tiny_styles, tmp_path):
    with pytest.raises(CheckpointError, match="no slim network"):
        resolve_style("alpha", tiny_styles, model="slim")
    folder = tmp_path / "styles"
    (folder / "slim").mkdir(parents=True)
    (folder / "alpha.safetensors").write_bytes((tiny_styles / "alpha.safetensors").read_bytes())
    save_checkpoint(folder / "slim" / "alpha.safetensors", TransformerNet(SLIM_WIDTH).state_dict(), {"style": "alpha"})
    assert resolve_style("alpha", folder, model="slim") == folder / "slim" / "alpha.safetensors"
    assert resolve_style("alpha", folder) == folder / "alpha.safetensors"


def test_slim_style_runs_through_the_stylizer_on_pytorch(tmp_path, monkeypatch):
    from styleforge.engine.options import StylizeOptions
    from styleforge.engine.pipeline import Stylizer
    from styleforge.models.registry import STYLES_DIR_ENV
    torch.manual_seed(1)
    net = TransformerNet(SLIM_WIDTH).eval()
    (tmp_path / "slim").mkdir()
    save_checkpoint(tmp_path / "one.safetensors", TransformerNet().state_dict(), {"style": "one"})
    save_checkpoint(tmp_path / "slim" / "one.safetensors", net.state_dict(), {"style": "one"}, dtype=torch.float32)
    monkeypatch.setenv(STYLES_DIR_ENV, str(tmp_path))
    stylizer = Stylizer(StylizeOptions(style="one", model="slim", device="cpu", precision="fp32"))
    x = torch.rand(1, 3, 40, 44) * 255
    with torch.no_grad():
        want = net(x).clamp(0, 255)
    assert torch.allclose(stylizer(x), want, atol=1e-3)
