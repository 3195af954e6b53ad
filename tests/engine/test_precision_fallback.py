"""fp16 overflow never reaches the user: the pipeline reruns in fp32 and says so once."""
import pytest
import torch
from conftest import random_style_state

from styleforge.engine.options import StylizeOptions
from styleforge.engine.pipeline import Stylizer
from styleforge.models.checkpoint import save_checkpoint


def test_fp16_overflow_falls_back_to_fp32(tmp_path):
    state = random_style_state(3)
    state["deconv3.conv2d.bias"] = torch.full((3,), 1e5)   # past fp16's 65504 on every pixel
    path = save_checkpoint(tmp_path / "loud.safetensors", state, {"style": "loud"}, dtype=torch.float32)
    content = torch.rand(1, 3, 24, 20) * 255
    expected = Stylizer(StylizeOptions(checkpoint=str(path), device="cpu", precision="fp32"))(content)

    stylizer = Stylizer(StylizeOptions(checkpoint=str(path), device="cpu", precision="fp16"))
    with pytest.warns(UserWarning, match="fp16 overflowed"):
        out = stylizer(content)
    assert stylizer.dtype == torch.float32
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, expected)


def test_auto_precision_on_cpu_follows_native_bf16():
    from styleforge.engine.backends import cpu_has_native_bf16, resolve_dtype
    want = torch.bfloat16 if cpu_has_native_bf16() else torch.float32
    assert resolve_dtype("auto", torch.device("cpu")) == want
    assert resolve_dtype("auto", torch.device("cuda")) == torch.float16


def test_auto_backend_keeps_fp32_on_the_reference_path():
    from styleforge.engine.backends import resolve_backend
    cpu = torch.device("cpu")
    assert resolve_backend("auto", cpu, torch.float32) == "reference"
    assert resolve_backend("auto", cpu, torch.float16) == "reference"   # no CUDA: never fused
