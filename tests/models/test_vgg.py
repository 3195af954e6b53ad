"""VGG16 loss network: torchvision key loading, output shapes, normalisation, clear errors.

Uses random VGGs in torchvision's key layout, narrow ones and one at the real widths saved as the
shipped-format fp16 file (the tests make every file they load).
"""
from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F

from styleforge.models.vgg import (
    CONV_INDICES,
    IMAGENET_MEAN,
    IMAGENET_STD,
    VGG16Features,
    VGGWeightsError,
    load_vgg16,
)

WIDTHS = (4, 8, 8, 16)


@pytest.fixture()
def vgg_file(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "vgg.pth"
    torch.save({k: v.half() for k, v in VGG16Features(WIDTHS).state_dict().items()}, path)
    return path


def test_state_dict_has_exactly_torchvision_keys():
    keys = set(VGG16Features().state_dict())
    assert keys == {f"features.{i}.{p}" for i in CONV_INDICES for p in ("weight", "bias")}


def test_output_shapes_and_widths(vgg_file):
    vgg = load_vgg16(vgg_file)
    assert not any(p.requires_grad for p in vgg.parameters())
    out = vgg(torch.rand(2, 3, 32, 40) * 255)
    assert [tuple(t.shape) for t in out] == [(2, 4, 32, 40), (2, 8, 16, 20), (2, 8, 8, 10), (2, 16, 4, 5)]
    early = vgg(torch.rand(1, 3, 32, 32) * 255, last="relu2_2")
    assert early.relu3_3 is None and early.relu4_3 is None and early.relu2_2.shape == (1, 8, 16, 16)


def test_normalisation_inside(vgg_file):
    vgg = load_vgg16(vgg_file)
    x = torch.rand(1, 3, 16, 16) * 255
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    h = (x / 255 - mean) / std
    f = vgg.features
    want = F.relu(f[2](F.relu(f[0](h))))
    torch.testing.assert_close(vgg(x, last="relu1_2").relu1_2, want, rtol=1e-5, atol=1e-5)


def test_full_torchvision_dict_and_bare_keys_load(tmp_path):
    torch.manual_seed(1)
    state = VGG16Features(WIDTHS).state_dict()
    full = {**state, "features.24.weight": torch.zeros(1), "classifier.0.weight": torch.zeros(2, 2)}
    torch.save(full, tmp_path / "full.pth")
    torch.save({k.removeprefix("features."): v for k, v in state.items()}, tmp_path / "bare.pth")
    for name in ("full.pth", "bare.pth"):
        loaded = load_vgg16(tmp_path / name).state_dict()
        assert all(torch.equal(loaded[k], state[k]) for k in state)


def test_missing_key_is_named(tmp_path):
    state = VGG16Features(WIDTHS).state_dict()
    del state["features.21.bias"]
    torch.save(state, tmp_path / "cut.pth")
    with pytest.raises(VGGWeightsError, match="features.21.bias"):
        load_vgg16(tmp_path / "cut.pth")


def test_a_pickle_of_objects_or_an_image_is_our_own_one_line(tmp_path):
    from PIL import Image
    torch.save({"features.0.weight": torch.zeros(1), "evil": Image.new("RGB", (1, 1))}, tmp_path / "evil.pth")
    Image.new("RGB", (4, 4)).save(tmp_path / "vgg.jpg")
    for name, reason in (("evil.pth", "could run code"), ("vgg.jpg", "is an image, not VGG16 weights")):
        with pytest.raises(VGGWeightsError) as info:
            load_vgg16(tmp_path / name)
        text = str(info.value)
        assert reason in text and "weights_only" not in text and "\n" not in text


def test_missing_file_says_where_to_get_weights(tmp_path):
    with pytest.raises(VGGWeightsError, match="does not exist.*--vgg-weights"):
        load_vgg16(tmp_path / "nope.pth")


def test_no_file_no_torchvision(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.models", None)
    with pytest.raises(VGGWeightsError, match="torchvision is not installed"):
        load_vgg16(None)


def test_real_width_fp16_file_loads_as_fp32_with_its_values(tmp_path):
    """The layout of the real loss-network file (VGG16 widths, fp16, torchvision keys, 15 MB)."""
    torch.manual_seed(2)
    state = {k: v.half() for k, v in VGG16Features().state_dict().items()}
    torch.save(state, tmp_path / "vgg16_relu4_3.fp16.pth")
    vgg = load_vgg16(tmp_path / "vgg16_relu4_3.fp16.pth")
    loaded = vgg.state_dict()
    assert all(loaded[k].dtype == torch.float32 and torch.equal(loaded[k], v.float()) for k, v in state.items())
    out = vgg(torch.full((1, 3, 32, 32), 128.0))
    assert [tuple(t.shape) for t in out] == [(1, 64, 32, 32), (1, 128, 16, 16), (1, 256, 8, 8), (1, 512, 4, 4)]
    assert all(torch.isfinite(t).all() and t.abs().sum() > 0 for t in out)
