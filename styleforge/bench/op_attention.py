"""Benchmark cases for the flash-style attention op (`styleforge bench --ops` runs them).

The issue's shapes, (B, H, N, D=64) self-attention: 32×12×197 (ViT-B/16 at 224²), 32×12×577
(384²), 32×12×1025 and 1×8×4096, in bf16 and fp32 (quick: the first and last, bf16). Providers:
"sdpa" (`F.scaled_dot_product_attention`, same dtype: PyTorch's best path, flash or
memory-efficient for bf16, math/efficient for fp32) and "styleforge" (the op; for fp32 the opt-in
bf16-input path, `fp32_via_bf16=True`). The reference is the twin in fp32. `flops` counts
4·B·H·Nq·Nk·D (the two matmuls; softmax not counted, as FlashAttention's papers do). This module
only builds cases; timing and gating are the harness's.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import kernels
from ..kernels.reference import attention as reference_attention
from .cases import OpCase

SHAPES = {"vit224": (32, 12, 197), "vit384": (32, 12, 577), "1025": (32, 12, 1025), "4096": (1, 8, 4096)}
HEAD_DIM = 64


def _case(label: str, b: int, h: int, n: int, dtype: torch.dtype, device: torch.device) -> OpCase:
    generator = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(b, h, n, HEAD_DIM, generator=generator, device=device).to(dtype) for _ in range(3))
    scale = HEAD_DIM ** -0.5
    fp32 = dtype == torch.float32
    es = q.element_size()
    return OpCase(
        op="attention",
        shape=f"{b}x{h}x{n}x{HEAD_DIM} ({label})",
        dtype=dtype,
        reference=lambda: reference_attention.attention(q.float(), k.float(), v.float(), None, scale),
        providers={"sdpa": lambda: F.scaled_dot_product_attention(q, k, v, scale=scale),
                   "styleforge": lambda: kernels.attention(q, k, v, None, scale, fp32_via_bf16=fp32)},
        bytes_moved=4 * q.numel() * es,
        flops=4 * b * h * n * n * HEAD_DIM,
        rel_tol=2e-2,
        notes={"head_dim": HEAD_DIM, "mask": "none",
               "styleforge_inputs": "bf16-rounded (fp32_via_bf16)" if fp32 else str(dtype).removeprefix("torch.")},
    )


def cases(device: torch.device, quick: bool = False) -> list[OpCase]:
    device = torch.device(device)
    if device.type == "cuda":
        kernels.ensure_cuda_kernels()
        names = ("vit224", "4096") if quick else tuple(SHAPES)
        dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float32)
        specs = [(label, *SHAPES[label], dtype) for dtype in dtypes for label in names]
    else:   # a CPU run is a smoke test of the plumbing, at a toy size
        specs = [("toy", 1, 2, 40, torch.bfloat16)]
    return [_case(label, b, h, n, dtype, device) for label, b, h, n, dtype in specs]
