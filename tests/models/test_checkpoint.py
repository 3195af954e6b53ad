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
    expected_shapes,
    load_checkpoint,
    save_checkpoint,
)
from styleforge.models.transformer_net import TransformerNet


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


def test_int8_file_round_trips_within_half_a_step_and_stylizes_alike(tmp_path):
    """Int8 storage (models.int8): every conv weight comes back within half its channel's step,
    biases and norm affines exactly as fp16, and the output stays close to the fp16 file's."""
    from styleforge.models.int8 import SCALE_SUFFIX
    state = random_style_state(3)
    half = save_checkpoint(tmp_path / "half.safetensors", state)
    small = save_checkpoint(tmp_path / "small.safetensors", state, int8=True)
    assert small.stat().st_size < 0.55 * half.stat().st_size
    loaded = load_checkpoint(small)
    assert loaded.metadata["quantization"] == "int8-per-output-channel"
    for key, value in state.items():
        got = loaded.state_dict[key]
        if value.dim() >= 2:
            step = value.abs().reshape(len(value), -1).amax(1) / 127
            err = (got - value).abs().reshape(len(value), -1).amax(1)
            assert bool((err <= step * 0.5 * 1.01 + 1e-6).all()), key
        else:
            assert torch.equal(got, value.half().float()), key
    x = torch.rand(1, 3, 32, 36) * 255
    with torch.no_grad():
        ref = build_model(load_checkpoint(half))(x)
        out = build_model(loaded)(x)
    psnr = 10 * torch.log10(255 ** 2 / (out - ref).pow(2).mean())
    assert psnr > 30, psnr
    from safetensors.torch import load_file, save_file
    tensors = load_file(small)
    orphan = dict(tensors)
    del orphan["conv1.conv2d.weight" + SCALE_SUFFIX]      # int8 with no scale: refused, not garbage
    save_file(orphan, tmp_path / "orphan.safetensors")
    with pytest.raises(CheckpointError, match="I8 values"):
        load_checkpoint(tmp_path / "orphan.safetensors")
    stray = {**tensors, "res9.weight" + SCALE_SUFFIX: torch.ones(3, dtype=torch.float16)}
    save_file(stray, tmp_path / "stray.safetensors")
    with pytest.raises(CheckpointError, match="belongs to no weight"):
        load_checkpoint(tmp_path / "stray.safetensors")


@pytest.mark.parametrize("width", [16, 32])
def test_expected_shapes_are_the_networks_own_and_a_fresh_dict_each_call(width):
    # Read off a meta-device network once per width: they must be what a real one holds, in order.
    real = {k: tuple(v.shape) for k, v in TransformerNet(width).state_dict().items()}
    shapes = expected_shapes(width)
    assert list(shapes.items()) == list(real.items())
    shapes.clear()   # a caller's edit does not reach the cached answer
    assert expected_shapes(width) == real
