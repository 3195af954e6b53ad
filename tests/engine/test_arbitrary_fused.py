"""The fused arbitrary forward is the model: in float64 on the CPU (the ops' twins) it equals
`ArbitraryStyleNet.stylize` (folded normalisations, padded buffers, merged skips); on CUDA in bf16
it runs the glue, attention and FFN kernels and stays within 3 % of the fp32 model."""
from __future__ import annotations

import pytest
import torch
from conftest import cuda_kernel_names
from torch.profiler import ProfilerActivity, profile

from styleforge import kernels
from styleforge.bench.arbitrary import random_model
from styleforge.engine.arbitrary_fused import FusedArbitraryNet
from styleforge.models.arbitrary import ArbitraryConfig, ArbitraryStyleNet
from styleforge.models.arbitrary.encoder import VGGEncoder


def _model(config: ArbitraryConfig = ArbitraryConfig()) -> ArbitraryStyleNet:
    torch.manual_seed(0)
    model = ArbitraryStyleNet(config, VGGEncoder(config.widths, "relu4_1" if config.levels[-1] == "relu4_1"
                                                 else "relu5_1"))
    with torch.no_grad():
        for p in model.parameters():
            torch.nn.init.kaiming_normal_(p) if p.dim() == 4 else torch.nn.init.uniform_(p, -0.05, 0.1)
    return model.eval().double()


NARROW = dict(widths=(8, 16, 32, 64, 64), heads=4, qk_dim=4)


@pytest.mark.parametrize("size", [(64, 96), (50, 70), (17, 40)])
@pytest.mark.parametrize("alpha,mix", [(1.0, False), (0.6, True)])
def test_fused_forward_equals_the_model_in_float64(size, alpha, mix):
    model = _model(ArbitraryConfig(**NARROW))
    fused = FusedArbitraryNet(model, "cpu", torch.float64)
    g = torch.Generator().manual_seed(1)
    x = torch.rand(1, 3, *size, generator=g, dtype=torch.float64) * 255
    paintings = [torch.rand(1, 3, 48, 64, generator=g, dtype=torch.float64) * 255 for _ in range(2)]
    with torch.no_grad():
        codes = [model.encode_style(p) for p in paintings]
        styles = [(codes[0], 1.0), (codes[1], 2.0)] if mix else [(codes[0], 1.0)]
        want = model.stylize(x, styles, alpha)
        got = fused.stylize(x, styles, alpha)
    assert got.shape == want.shape and got.dtype == torch.float64
    assert torch.allclose(got, want, atol=1e-8), float((got - want).abs().max())


@pytest.mark.parametrize("levels", [("relu3_1", "relu4_1", "relu5_1"), ("relu4_1",), ("relu3_1",)])
def test_fused_forward_other_levels(levels):
    model = _model(ArbitraryConfig(levels=levels, **NARROW))
    fused = FusedArbitraryNet(model, "cpu", torch.float64)
    x = torch.rand(1, 3, 64, 48, dtype=torch.float64) * 255
    with torch.no_grad():
        code = model.encode_style(torch.rand(1, 3, 64, 64, dtype=torch.float64) * 255)
        assert torch.allclose(fused.stylize(x, [(code, 1.0)]), model.stylize(x, [(code, 1.0)]), atol=1e-8)


def test_fused_forward_batch_of_two_equals_the_model():
    # B > 1 takes the batched projection (baddbmm), B = 1 the addmm one: both are the model.
    model = _model(ArbitraryConfig(**NARROW))
    fused = FusedArbitraryNet(model, "cpu", torch.float64)
    g = torch.Generator().manual_seed(2)
    x = torch.rand(2, 3, 40, 56, generator=g, dtype=torch.float64) * 255
    with torch.no_grad():
        code = model.encode_style(torch.rand(2, 3, 48, 48, generator=g, dtype=torch.float64) * 255)
        want = model.stylize(x, [(code, 1.0)])
        got = fused.stylize(x, [(code, 1.0)])
    assert torch.allclose(got, want, atol=1e-8), float((got - want).abs().max())


def test_queries_reach_the_attention_contiguous_and_zero_padded(monkeypatch):
    # The kernel's entry copies a q that is not contiguous (B, H, N, D): the projection must
    # write it in that layout, with zeros past qk_dim in each head (they change no q·k).
    from styleforge.engine import arbitrary_fused
    model = _model(ArbitraryConfig(**NARROW))
    fused = FusedArbitraryNet(model, "cpu", torch.float64)
    seen, real = [], arbitrary_fused.attention

    def recording(q, k, v, mask, scale):
        seen.append((q.is_contiguous(), tuple(q.shape), float(q[..., NARROW["qk_dim"]:].abs().max()),
                     float(q[..., :NARROW["qk_dim"]].abs().max())))
        return real(q, k, v, mask, scale)

    monkeypatch.setattr(arbitrary_fused, "attention", recording)
    x = torch.rand(1, 3, 48, 64, dtype=torch.float64) * 255
    with torch.no_grad():
        fused.stylize(x, [(model.encode_style(torch.rand(1, 3, 48, 48, dtype=torch.float64) * 255), 1.0)])
    assert len(seen) == len(model.config.levels)
    for contiguous, shape, pad_max, real_max in seen:
        assert contiguous and shape[1] == NARROW["heads"] and shape[-1] > NARROW["qk_dim"]
        assert pad_max == 0.0 and real_max > 0.0


@pytest.mark.gpu
def test_fused_forward_on_cuda_runs_the_kernels_and_matches_fp32(loaded):
    model = random_model()
    fused = FusedArbitraryNet(model, "cuda", torch.bfloat16)
    ref_model = random_model().cuda().float()
    x32 = torch.rand(1, 3, 288, 512, device="cuda") * 255
    s32 = torch.rand(1, 3, 256, 320, device="cuda") * 255
    with torch.inference_mode():
        code = random_model().cuda().to(torch.bfloat16).encode_style(s32.to(torch.bfloat16))
        x = x32.to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
        run = lambda: fused.stylize(x, [(code, 1.0)])  # noqa: E731
        run()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            out = run()
        ops = [e.name for e in prof.events()]
        for op, count in (("styleforge::attention", 2), ("styleforge::ffn", 2), ("styleforge::adaattn_stats", 2),
                          ("styleforge::norm_affine", 4)):
            assert ops.count(op) == count, (op, ops.count(op))
        assert ops.count("styleforge::feature_pad") >= 10
        names = " ".join(cuda_kernel_names(run)).lower()
        assert "feature_pad" in names and "adaattn_stats" in names and "softmax" not in names
        with kernels.using("reference"):
            want = ref_model.stylize(x32, [(ref_model.encode_style(s32), 1.0)])
    err = float((out.float() - want).norm() / want.norm())
    assert err < 3e-2, f"fused bf16 vs fp32 model: relative error {err:.3g}"


@pytest.mark.gpu
def test_graph_runner_autotunes_its_warm_up_and_captures_without_it(loaded):
    # The warm-up times cuDNN's algorithms (benchmark on, deterministic keys); the capture must
    # run with the autotuner off (a timing run synchronises the device) and replay the forward.
    from styleforge.engine.arbitrary import _GraphRunner
    from styleforge.engine.cudnn_flags import cudnn_flags
    model = random_model()
    fused = FusedArbitraryNet(model, "cuda", torch.bfloat16)
    x = torch.rand(1, 3, 96, 128, device="cuda") * 255
    flags = []
    before = torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic
    with torch.inference_mode():
        code = model.cuda().to(torch.bfloat16).encode_style(
            (torch.rand(1, 3, 64, 64, device="cuda") * 255).to(torch.bfloat16))

        def fn(t):
            flags.append((torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic))
            return fused.stylize(t, [(code, 1.0)])

        runner = _GraphRunner(fn)
        got = runner(x, (), code)
        with cudnn_flags(False, True, torch.backends.cudnn.allow_tf32):   # the warm-up's cached plans
            want = fused.stylize(x, [(code, 1.0)])
    assert flags == [(True, True), (False, True)] and runner.failures == 0
    assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic) == before
    assert float((got - want).norm() / want.norm()) < 1e-3
