"""`FeedForward`: the transformer feed-forward block on the fused `styleforge::ffn` op.

A drop-in for the usual `x + fc2(gelu(fc1(x)))` (or without the residual): the parameters are
two nn.Linear layers named `fc1` and `fc2`, so a state dict from that plain composition loads
with `strict=True` and vice versa. The forward is one op call (`kernels.ffn`): on CUDA two
cuBLASLt GEMMs with GELU + bias and residual in their epilogues; on CPU, or under
`kernels.use("reference")`, the pure-PyTorch twin. Not a gated (GEGLU/SwiGLU) FFN; no dropout.
"""
from __future__ import annotations

import torch
from torch import nn

from ..kernels.ffn import ffn
from ..kernels.reference.ffn import FP32_PRECISIONS, GELUS


class FeedForward(nn.Module):
    """y = [x +] fc2(gelu(fc1(x))) for x (..., dim); fc1: dim → hidden, fc2: hidden → dim."""

    def __init__(self, dim: int, hidden: int, gelu: str = "tanh", bias: bool = True, residual: bool = True,
                 fp32_precision: str = "ieee", device=None, dtype=None):
        super().__init__()
        if gelu not in GELUS:
            raise ValueError(f"FeedForward: gelu must be one of {GELUS}, got {gelu!r}")
        if fp32_precision not in FP32_PRECISIONS:
            raise ValueError(f"FeedForward: fp32_precision must be one of {FP32_PRECISIONS}, got {fp32_precision!r}")
        self.fc1 = nn.Linear(dim, hidden, bias=bias, device=device, dtype=dtype)
        self.fc2 = nn.Linear(hidden, dim, bias=bias, device=device, dtype=dtype)
        self.gelu = gelu
        self.residual = residual
        self.fp32_precision = fp32_precision

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ffn(x, self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias,
                           residual=x if self.residual else None, gelu=self.gelu,
                           fp32_precision=self.fp32_precision)

    def extra_repr(self) -> str:
        return (f"gelu={self.gelu!r}, residual={self.residual}"
                + (f", fp32_precision={self.fp32_precision!r}" if self.fp32_precision != "ieee" else ""))
