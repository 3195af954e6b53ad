"""Benchmark cases for the fused FFN op (`styleforge bench --ops` runs them).

y = gelu(x·w1ᵀ + b1)·w2ᵀ + b2 + x (tanh GELU, the residual is the input, as in a transformer
block) at tokens 8192, (dim, hidden) = (512, 2048) and (768, 3072), in bf16 and fp32 (quick:
bf16 only). Providers: "torch" (eager F.linear → F.gelu → F.linear + residual in the inputs'
dtype — issue 7's yardstick), "torch.compile" of that function (CUDA only: compiling on a CPU
smoke run costs more than the run), "styleforge" (the op); fp32 adds "styleforge.tf32" (the
opt-in TF32 path, compared with exact eager fp32 for the ≥ 3× target). `flops` = 2·2·T·d·h, the
two GEMMs; `bytes_moved` counts x, the weights and y once (the hidden never has to leave the
chip in an ideal kernel). This module only builds cases; timing and gating are the harness's.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import kernels
from ..kernels.reference import ffn as reference_ffn
from .cases import OpCase

SHAPES = ((8192, 512, 2048), (8192, 768, 3072))   # (tokens, dim, hidden)


def eager_ffn(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2) + x


def _case(tokens: int, d: int, h: int, dtype: torch.dtype, device: torch.device) -> OpCase:
    generator = torch.Generator(device=device).manual_seed(0)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=generator, device=device) * scale).to(dtype)

    x = rand(tokens, d)
    w1, b1 = rand(h, d, scale=d ** -0.5), rand(h, scale=0.5)
    w2, b2 = rand(d, h, scale=h ** -0.5), rand(d, scale=0.5)
    providers = {"torch": lambda: eager_ffn(x, w1, b1, w2, b2)}
    if device.type == "cuda":
        compiled = torch.compile(eager_ffn, dynamic=False)
        providers["torch.compile"] = lambda: compiled(x, w1, b1, w2, b2)
    providers["styleforge"] = lambda: kernels.ffn(x, w1, b1, w2, b2, residual=x, gelu="tanh")
    if dtype == torch.float32:
        providers["styleforge.tf32"] = lambda: kernels.ffn(x, w1, b1, w2, b2, residual=x, gelu="tanh",
                                                           fp32_precision="tf32")
    es = x.element_size()
    return OpCase(
        op="ffn",
        shape=f"{tokens}x{d}->{h}->{d}",
        dtype=dtype,
        reference=lambda: reference_ffn.ffn(x, w1, b1, w2, b2, x, "tanh").float(),
        providers=providers,
        bytes_moved=(2 * tokens * d + 2 * d * h + h + d) * es,
        flops=2 * 2 * tokens * d * h,
        rel_tol=2e-2,
        notes={"gelu": "tanh", "residual": "x", "bias": True},
    )


def cases(device: torch.device, quick: bool = False) -> list[OpCase]:
    device = torch.device(device)
    if device.type == "cuda":
        dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float32)
        specs = [(*shape, dtype) for dtype in dtypes for shape in SHAPES]
    else:   # a CPU run is a smoke test of the plumbing, at a toy size
        specs = [(64, 32, 128, torch.float32)]
    return [_case(t, d, h, dtype, device) for t, d, h, dtype in specs]
