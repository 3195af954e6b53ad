"""Hostile or careless checkpoint files: each refused with one line naming the file and why,
before any weights are used (NaN/inf, integer weights, images given as styles, truncated or
code-carrying pickles, a wrong name in a safetensors header, an upper-case suffix)."""
import pytest
import torch
from conftest import random_style_state
from PIL import Image
from safetensors.torch import save, save_file

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



def _safetensors_with_header_length(path, state, length):
    """`state` as a safetensors file whose JSON header is exactly `length` bytes (its metadata
    padded; written by hand because the library pads headers to a multiple of 8)."""
    import json
    raw = save(state)
    old = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + old])
    header["__metadata__"] = {"pad": ""}
    short = len(json.dumps(header, separators=(",", ":")).encode())
    assert short <= length, f"the header needs {short} bytes at least"
    header["__metadata__"]["pad"] = "x" * (length - short)
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) == length
    path.write_bytes(length.to_bytes(8, "little") + text + raw[8 + old:])
    return path


@pytest.mark.parametrize("length, magic, name", [
    (128 + 256 * 20, b"\x80", "pickle_byte.pth"),        # 0x1480: a pickle's first byte
    (6016, b"\x80", "issue_37.safetensors"),              # 0x1780, the length that issue 37 met
    (0x4D42, b"BM", "bitmap_magic.bmp"),                   # a bitmap's magic, under an image suffix
])
def test_safetensors_is_told_by_its_header_rule_before_other_magic(tmp_path, length, magic, name):
    from styleforge.models.checkpoint import file_kind
    state = random_style_state(4)
    path = _safetensors_with_header_length(tmp_path / name, state, length)
    assert path.read_bytes().startswith(magic)
    assert file_kind(path) == "safetensors"
    checkpoint = load_checkpoint(path)
    assert set(checkpoint.metadata["pad"]) == {"x"}
    for key, value in state.items():
        assert torch.equal(checkpoint.state_dict[key], value), key


def test_a_real_safetensors_file_padded_to_a_0x80_length_loads(tmp_path):
    """Through the library's own writer: metadata padded until the header length ends in 0x80."""
    from styleforge.models.checkpoint import file_kind
    state = random_style_state(5)
    path = tmp_path / "written.safetensors"
    for pad in range(512):
        save_file(state, str(path), metadata={"painting": "p" * pad})
        if path.read_bytes()[0] == 0x80:
            break
    else:
        raise AssertionError("no padding gave a header length ending in 0x80")
    assert file_kind(path) == "safetensors"
    checkpoint = load_checkpoint(path)
    assert checkpoint.metadata["painting"] == "p" * pad
    assert torch.equal(checkpoint.state_dict["res5.conv2.conv2d.weight"], state["res5.conv2.conv2d.weight"])


def test_what_only_looks_like_safetensors_is_not_taken_for_it(tmp_path):
    from styleforge.models.checkpoint import file_kind
    state = random_style_state(6)
    torch.save(state, tmp_path / "zip.pth")
    torch.save(state, tmp_path / "legacy.pth", _use_new_zipfile_serialization=False)
    Image.new("RGB", (4, 4)).save(tmp_path / "image.safetensors", format="PNG")
    body = b'{"a": 1}'
    cases = {
        "zip.pth": "torch",
        "legacy.pth": "torch",                                          # opens with 0x80
        "image.safetensors": "image",
        "length_past_end.bin": (len(body) + 1).to_bytes(8, "little") + body,
        "not_json.bin": (8).to_bytes(8, "little") + b"{not json",
        "json_list.bin": (3).to_bytes(8, "little") + b"[1]",
        "header_only_8_bytes.bin": (0).to_bytes(8, "little"),
        "huge_length.bin": (2**63).to_bytes(8, "little") + body,
    }
    for name, want in cases.items():
        if isinstance(want, bytes):
            (tmp_path / name).write_bytes(want)
            want = "unknown"
        assert file_kind(tmp_path / name) == want, name
    assert load_checkpoint(tmp_path / "legacy.pth").state_dict.keys() == state.keys()
    exact = tmp_path / "exact_fit.bin"                   # N = size − 8: the whole rest is header
    exact.write_bytes(len(body).to_bytes(8, "little") + body)
    assert file_kind(exact) == "safetensors"
