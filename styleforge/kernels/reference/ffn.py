"""The pure-PyTorch twin of `styleforge::ffn`: test oracle, benchmark baseline, fallback.

`ffn(x, w1, b1, w2, b2, residual, gelu)` is the transformer feed-forward block
y = gelu(x·w1ᵀ + b1)·w2ᵀ + b2 + residual, for x (..., d), w1 (h, d), w2 (d, h), biases (h,)
and (d,), residual shaped like y. `gelu` is "tanh" (the approximation cuBLASLt's GELU epilogue
computes), "erf" (exact GELU, nn.GELU's default) or "none" (no activation). fp16/bf16/fp32
inputs are computed in fp32 and returned in x's dtype; float64 stays float64 (gradcheck).
`check_args` is the one statement of the argument rules: the fake impl and the fused CUDA path
in `ffn.py` both call it, so every path refuses exactly the same calls. Not fast.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
GELUS = ("tanh", "erf", "none")
FP32_PRECISIONS = ("ieee", "tf32")   # the names PyTorch's `fp32_precision` settings use


def _check_vector(name: str, t: torch.Tensor | None, size: int, x: torch.Tensor) -> None:
    if t is None:
        return
    if t.dim() != 1 or t.shape[0] != size:
        raise ValueError(f"ffn: {name} must have shape ({size},), got {tuple(t.shape)}")
    if t.dtype != x.dtype:
        raise ValueError(f"ffn: {name} dtype {t.dtype} must equal x dtype {x.dtype}")
    if t.device != x.device:
        raise ValueError(f"ffn: {name} is on {t.device}, x on {x.device}")


def check_args(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor | None, w2: torch.Tensor,
               b2: torch.Tensor | None, residual: torch.Tensor | None, gelu: str,
               fp32_precision: str = "ieee") -> None:
    """Raise ValueError naming the argument and the rule it breaks."""
    if x.dim() < 1:
        raise ValueError("ffn: x must have at least one dimension (..., dim), got a scalar")
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"ffn: x dtype {x.dtype} is unsupported (float16, bfloat16, float32, float64)")
    if gelu not in GELUS:
        raise ValueError(f"ffn: gelu must be one of {GELUS}, got {gelu!r}")
    if fp32_precision not in FP32_PRECISIONS:
        raise ValueError(f"ffn: fp32_precision must be one of {FP32_PRECISIONS}, got {fp32_precision!r}")
    d = x.shape[-1]
    for name, w in (("w1", w1), ("w2", w2)):
        if w.dim() != 2:
            raise ValueError(f"ffn: {name} must be 2-D, got shape {tuple(w.shape)}")
        if w.dtype != x.dtype:
            raise ValueError(f"ffn: {name} dtype {w.dtype} must equal x dtype {x.dtype}")
        if w.device != x.device:
            raise ValueError(f"ffn: {name} is on {w.device}, x on {x.device}")
    h = w1.shape[0]
    if w1.shape[1] != d:
        raise ValueError(f"ffn: w1 must have shape (hidden, {d}) for x's last dim {d}, got {tuple(w1.shape)}")
    if tuple(w2.shape) != (d, h):
        raise ValueError(f"ffn: w2 must have shape ({d}, {h}) = (dim, hidden), got {tuple(w2.shape)}")
    _check_vector("b1", b1, h, x)
    _check_vector("b2", b2, d, x)
    if residual is not None:
        if residual.shape != x.shape:
            raise ValueError(f"ffn: residual must have x's shape {tuple(x.shape)}, got {tuple(residual.shape)}")
        if residual.dtype != x.dtype:
            raise ValueError(f"ffn: residual dtype {residual.dtype} must equal x dtype {x.dtype}")
        if residual.device != x.device:
            raise ValueError(f"ffn: residual is on {residual.device}, x on {x.device}")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def activation(h: torch.Tensor, gelu: str) -> torch.Tensor:
    return h if gelu == "none" else F.gelu(h, approximate="tanh" if gelu == "tanh" else "none")


def ffn(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor | None, w2: torch.Tensor,
        b2: torch.Tensor | None = None, residual: torch.Tensor | None = None, gelu: str = "tanh",
        fp32_precision: str = "ieee") -> torch.Tensor:
    """y = gelu(x·w1ᵀ + b1)·w2ᵀ + b2 + residual in fp32 (float64 for float64 x), in x's dtype.

    `fp32_precision` is accepted so the twin takes the op's arguments; the twin is always exact.
    """
    check_args(x, w1, b1, w2, b2, residual, gelu, fp32_precision)
    ct = compute_dtype(x.dtype)

    def up(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t.to(ct)

    hidden = activation(F.linear(x.to(ct), w1.to(ct), up(b1)), gelu)
    y = F.linear(hidden, w2.to(ct), up(b2))
    if residual is not None:
        y = y + residual.to(ct)
    return y.to(x.dtype)
