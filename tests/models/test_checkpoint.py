"""Checkpoint rules: pytorch/examples `.pth` files load strictly; bad files fail by name.

The reference forward below is written from the paper's layout with `F.conv2d`,
`F.instance_norm`, reflection `F.pad` and nearest `F.interpolate` in float64, reading the raw
state dict by name, so it shares no code with `TransformerNet`.
"""
import pytest
import torch
import torch.nn.functional as F
from conftest import assert_matches_reference, random_style_state

from styleforge.models.checkpoint import (
    CheckpointError,
    build_model,
    load_checkpoint,
    save_checkpoint,
)


def reference_forward(sd: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    sd = {k: v.double() for k, v in sd.items()}

    def conv(name, y, stride=1, upsample=False):
        if upsample:
            y = F.interpolate(y, scale_factor=2, mode="nearest")
        k = sd[f"{name}.conv2d.weight"].shape[-1]
        y = F.pad(y, (k // 2,) * 4, mode="reflect")
        return F.conv2d(y, sd[f"{name}.conv2d.weight"], sd[f"{name}.conv2d.bias"], stride=stride)

    def norm(name, y):
        return F.instance_norm(y, weight=sd[f"{name}.weight"], bias=sd[f"{name}.bias"], eps=1e-5)

    y = x.double()
    y = F.relu(norm("in1", conv("conv1", y)))
    y = F.relu(norm("in2", conv("conv2", y, stride=2)))
    y = F.relu(norm("in3", conv("conv3", y, stride=2)))
    for i in range(1, 6):
        r = F.relu(norm(f"res{i}.in1", conv(f"res{i}.conv1", y)))
        y = y + norm(f"res{i}.in2", conv(f"res{i}.conv2", r))
    y = F.relu(norm("in4", conv("deconv1", y, upsample=True)))
    y = F.relu(norm("in5", conv("deconv2", y, upsample=True)))
    return conv("deconv3", y)


def pytorch_examples_pth(path, seed=3):
    """What old pytorch/examples runs saved: DataParallel `module.` keys + InstanceNorm stats."""
    state = random_style_state(seed)
    legacy = {}
    for key, value in state.items():
        legacy[f"module.{key}"] = value
        if key.split(".")[-2].startswith("in") and key.endswith(".weight"):
            stem = key[: -len(".weight")]
            legacy[f"module.{stem}.running_mean"] = torch.zeros_like(value)
            legacy[f"module.{stem}.running_var"] = torch.ones_like(value)
    torch.save(legacy, path)
    return state


def test_pytorch_examples_pth_loads_strictly_and_matches_reference_forward(tmp_path):
    state = pytorch_examples_pth(tmp_path / "candy.pth")
    raw_keys = torch.load(tmp_path / "candy.pth", weights_only=True).keys()
    assert "module.res2.in1.running_var" in raw_keys and "module.in5.running_mean" in raw_keys
    checkpoint = load_checkpoint(tmp_path / "candy.pth")
    assert sorted(checkpoint.state_dict) == sorted(state)
    assert checkpoint.metadata["style"] == "candy"
    x = torch.rand(1, 3, 24, 20) * 255
    with torch.inference_mode():
        out = build_model(checkpoint)(x)
    assert_matches_reference(out, reference_forward(state, x))


def test_safetensors_round_trip_keeps_weights_and_metadata(tmp_path):
    state = random_style_state(4)
    save_checkpoint(tmp_path / "s.safetensors", state, {"painting": "p", "training": {"lr": 1e-3}},
                    dtype=torch.float32)
    checkpoint = load_checkpoint(tmp_path / "s.safetensors")
    assert all(torch.equal(checkpoint.state_dict[k], state[k]) for k in state)
    assert checkpoint.metadata["painting"] == "p"
    assert checkpoint.training_settings() == {"lr": 1e-3}
    assert [p.name for p in tmp_path.iterdir()] == ["s.safetensors"]


def _without(key):
    def edit(state):
        del state[key]
        return state
    return edit


def _reshaped(key):
    def edit(state):
        state[key] = torch.zeros(7, 3, 3, 3)
        return state
    return edit


def _extra(state):
    state["res9.conv1.conv2d.weight"] = torch.zeros(1)
    return state


@pytest.mark.parametrize("edit,needle", [
    (_without("res3.in2.bias"), "missing 1 keys (first: res3.in2.bias)"),
    (_reshaped("conv2.conv2d.weight"), "conv2.conv2d.weight has shape (7, 3, 3, 3)"),
    (_extra, "unexpected 1 keys (first: res9.conv1.conv2d.weight)"),
], ids=["missing-key", "wrong-shape", "unexpected-key"])
def test_mismatched_state_dict_names_the_mismatch(tmp_path, edit, needle):
    path = tmp_path / "bad.pth"
    torch.save(edit(random_style_state(0)), path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert str(path) in str(info.value) and needle in str(info.value)


def test_not_a_state_dict(tmp_path):
    torch.save([torch.zeros(3)], tmp_path / "list.pth")
    torch.save({"conv1.conv2d.weight": "text"}, tmp_path / "strings.pth")
    with pytest.raises(CheckpointError, match="holds a list, not a state dict"):
        load_checkpoint(tmp_path / "list.pth")
    with pytest.raises(CheckpointError, match="entry 'conv1.conv2d.weight' is not a tensor"):
        load_checkpoint(tmp_path / "strings.pth")


@pytest.mark.parametrize("name", ["garbage.pth", "garbage.safetensors"])
def test_garbage_bytes(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CheckpointError, match=str(path)):
        load_checkpoint(path)


def test_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        load_checkpoint(tmp_path / "nope.pth")
