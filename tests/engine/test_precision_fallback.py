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


@pytest.mark.parametrize("native", [True, False], ids=["bf16-cpu", "avx2-cpu"])
@pytest.mark.parametrize("env, capped", [
    ({}, False),
    ({"ONEDNN_MAX_CPU_ISA": "AVX2"}, True),
    ({"ONEDNN_MAX_CPU_ISA": "avx2_vnni"}, True),
    ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"}, True),
    ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, False),
    ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}, False),
    ({"ONEDNN_MAX_CPU_ISA": "ALL"}, False),
    ({"DNNL_MAX_CPU_ISA": "AVX2"}, True),                                # the older name
    ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX", "DNNL_MAX_CPU_ISA": "AVX2"}, False),  # ONEDNN_ first
    ({"ONEDNN_MAX_CPU_ISA": "NOT_AN_ISA"}, True),                        # unknown: the safe fp32
])
def test_auto_precision_on_cpu_is_bf16_only_where_onednn_runs_it_natively(monkeypatch, native, env, capped):
    """Both kinds of CPU, whatever this machine is: the probe is forced, and an ISA cap in the
    environment (read through styleforge.switches) turns bf16 hardware back into fp32."""
    from styleforge.engine import backends
    for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda: native)
    want = torch.bfloat16 if native and not capped else torch.float32
    assert backends.resolve_dtype("auto", torch.device("cpu")) == want
    assert backends.resolve_dtype("auto", torch.device("cuda")) == torch.float16
    assert backends.resolve_dtype("fp32", torch.device("cpu")) == torch.float32
    assert backends.resolve_dtype("bf16", torch.device("cpu")) == torch.bfloat16


def test_auto_on_a_bf16_cpu_runs_the_model_in_bf16(monkeypatch, tmp_path):
    """What the Stylizer does with `auto` where the CPU has bf16: a bf16 run, off fp32 by bf16's
    rounding and no more (the path an AMX CI machine takes, taken here on any CPU)."""
    from styleforge.engine import backends
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda: True)
    path = save_checkpoint(tmp_path / "s.safetensors", random_style_state(5), {"style": "s"}, dtype=torch.float32)
    content = torch.rand(1, 3, 24, 20) * 255
    auto = Stylizer(StylizeOptions(checkpoint=str(path), device="cpu", precision="auto"))
    fp32 = Stylizer(StylizeOptions(checkpoint=str(path), device="cpu", precision="fp32"))
    assert (auto.dtype, fp32.dtype) == (torch.bfloat16, torch.float32)
    got, want = auto(content), fp32(content)
    assert not torch.equal(got, want)                       # bf16 really ran
    assert float((got - want).abs().mean()) < 0.02 * float(want.abs().mean())


def test_auto_backend_keeps_fp32_on_the_reference_path():
    from styleforge.engine.backends import resolve_backend
    cpu = torch.device("cpu")
    assert resolve_backend("auto", cpu, torch.float32) == "reference"
    assert resolve_backend("auto", cpu, torch.float16) == "reference"   # no CUDA: never fused
