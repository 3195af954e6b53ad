"""Hostile or careless checkpoint files: each refused with one line naming the file and why,
before any weights are used (NaN/inf, integer weights, images given as styles, truncated or
code-carrying pickles, a wrong name in a safetensors header, an upper-case suffix)."""
import pytest
import torch
from conftest import random_style_state
from PIL import Image
from safetensors.torch import save_file

from styleforge.models.checkpoint import CheckpointError, load_checkpoint
from styleforge.models.registry import load_style, resolve_style


def test_non_finite_or_integer_weights_are_refused(tmp_path):
    state = random_style_state(0)
    for name, value in (("nan", float("nan")), ("inf", float("inf"))):
        bad = dict(state)
        bad["conv1.conv2d.weight"] = bad["conv1.conv2d.weight"].clone()
        bad["conv1.conv2d.weight"][0, 0, 0, 0] = value
        path = tmp_path / f"{name}.safetensors"
        save_file(bad, str(path))
        with pytest.raises(CheckpointError, match=rf"{name}.safetensors: 1 weights hold NaN or inf"):
            load_checkpoint(path)
    ints = {k: v.round().to(torch.int32) for k, v in state.items()}
    for suffix in ("safetensors", "pth"):
        path = tmp_path / f"ints.{suffix}"
        save_file(ints, str(path)) if suffix == "safetensors" else torch.save(ints, path)
        with pytest.raises(CheckpointError, match=r"ints\..*holds .*(I32|int32).* floating point"):
            load_checkpoint(path)


def test_format_is_read_from_the_bytes_not_the_suffix(tmp_path):
    state = random_style_state(1)
    upper = tmp_path / "X.SAFETENSORS"
    save_file(state, str(upper))
    torch.save(state, tmp_path / "really_torch.safetensors")
    save_file(state, str(tmp_path / "really_safetensors.pth"))
    for path in (upper, tmp_path / "really_torch.safetensors", tmp_path / "really_safetensors.pth"):
        got = load_checkpoint(path).state_dict
        assert torch.equal(got["conv1.conv2d.weight"], state["conv1.conv2d.weight"])
    (tmp_path / "empty.pth").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty.pth: neither a safetensors nor a PyTorch"):
        load_checkpoint(tmp_path / "empty.pth")


def test_an_image_given_as_a_style_says_so_without_torch_text(tmp_path):
    painting = tmp_path / "painting.jpg"
    Image.new("RGB", (8, 8), "red").save(painting)
    for call in (lambda: load_checkpoint(painting), lambda: load_style(str(painting)),
                 lambda: resolve_style("missing_painting.jpg", tmp_path)):
        with pytest.raises(CheckpointError) as info:
            call()
        text = str(info.value)
        assert "is an image, not a style" in text and "--style-image" in text
        assert "Weights only" not in text and "file an issue" not in text and "coming" not in text
    renamed = tmp_path / "painting.pth"                     # an image under a checkpoint suffix
    renamed.write_bytes(painting.read_bytes())
    with pytest.raises(CheckpointError, match="is an image, not a style"):
        load_checkpoint(renamed)


def test_truncated_and_code_carrying_pickles_are_one_line(tmp_path):
    state = random_style_state(2)
    torch.save(state, tmp_path / "whole.pth")
    (tmp_path / "cut.pth").write_bytes((tmp_path / "whole.pth").read_bytes()[:5000])
    torch.save({"weights": state, "extra": Image.new("RGB", (2, 2))}, tmp_path / "hostile.pth")
    for name, reason in (("cut.pth", "truncated or damaged"), ("hostile.pth", "could run code")):
        with pytest.raises(CheckpointError) as info:
            load_checkpoint(tmp_path / name)
        assert reason in str(info.value) and "\n" not in str(info.value)
        assert "Weights only load failed" not in str(info.value)


def test_a_wrong_name_is_refused_from_the_header_before_any_tensor_is_read(tmp_path, monkeypatch):
    import safetensors
    state = random_style_state(3)
    state["conv1.conv2d.weight_typo"] = state.pop("conv1.conv2d.weight")
    state["padding"] = torch.zeros(4_000_000)                # 16 MB the loader must not read
    path = tmp_path / "big.safetensors"
    save_file(state, str(path))
    real_open = safetensors.safe_open
    reads = []

    class Counting:
        def __init__(self, *args, **kwargs):
            self.inner = real_open(*args, **kwargs)

        def __enter__(self):
            self.inner.__enter__()
            return self

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

        def get_tensor(self, key):
            reads.append(key)
            return self.inner.get_tensor(key)

        def __getattr__(self, name):
            return getattr(self.inner, name)
    monkeypatch.setattr(safetensors, "safe_open", Counting)
    with pytest.raises(CheckpointError, match=r"big.safetensors: not a style-network checkpoint: missing 1"):
        load_checkpoint(path)
    assert reads == []
