"""The pure-PyTorch twin of `styleforge::attention`: test oracle, benchmark baseline, fallback.

`attention(q, k, v, key_padding_mask, scale)` is softmax(scale · q kᵀ, masked) v per (batch, head):
q (B, H, Nq, D), k and v (B, H, Nk, D), key_padding_mask (B, Nk) bool with True = ignore that key.
Half/bf16 inputs are computed in fp32 and returned in q's dtype; fp32/fp64 inputs in their own
dtype (fp64 is what gradcheck and the tests' oracle use). A query row whose keys are all
masked returns ZEROS (a plain softmax gives 0/0 = NaN there; PyTorch's backends differ, NaN or
zeros), and so does the CUDA kernel (`csrc/attention/attention.cu`). `check_args` is the
one statement of the argument rules; the fake impl uses it and `csrc/bindings_attention.cpp`
mirrors the kernel's stricter subset (fp16/bf16, D ∈ {32, 64, 128}). The N×N matrix IS
materialised here: this is the slow, obviously-correct path, not a memory-efficient one.
"""
from __future__ import annotations

import math

import torch

KERNEL_DTYPES = (torch.float16, torch.bfloat16)
KERNEL_HEAD_DIMS = (32, 64, 128)


def check_args(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor | None,
               scale: float) -> None:
    """Raise ValueError naming the argument and the rule it breaks."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"attention: {name} must be 4-D (B, H, N, D), got shape {tuple(t.shape)}")
        if not t.is_floating_point():
            raise ValueError(f"attention: {name} must be a floating tensor, got {t.dtype}")
        if t.dtype != q.dtype or t.device != q.device:
            raise ValueError(f"attention: {name} is {t.dtype} on {t.device}, q is {q.dtype} on {q.device}")
    b, h, _, d = q.shape
    if k.shape != v.shape:
        raise ValueError(f"attention: k {tuple(k.shape)} and v {tuple(v.shape)} must have the same shape")
    if k.shape[0] != b or k.shape[1] != h or k.shape[3] != d:
        raise ValueError(f"attention: k/v shape {tuple(k.shape)} does not match q {tuple(q.shape)} in B, H or D")
    if key_padding_mask is not None:
        if key_padding_mask.dtype != torch.bool:
            raise ValueError(f"attention: key_padding_mask must be bool (True = ignore), got "
                             f"{key_padding_mask.dtype}")
        if tuple(key_padding_mask.shape) != (b, k.shape[2]):
            raise ValueError(f"attention: key_padding_mask must have shape (B, Nk) = ({b}, {k.shape[2]}), "
                             f"got {tuple(key_padding_mask.shape)}")
        if key_padding_mask.device != q.device:
            raise ValueError(f"attention: key_padding_mask is on {key_padding_mask.device}, q on {q.device}")
    if not math.isfinite(scale):
        raise ValueError(f"attention: scale must be finite, got {scale}")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor | None = None,
              scale: float | None = None) -> torch.Tensor:
    if scale is None:
        scale = q.shape[-1] ** -0.5
    check_args(q, k, v, key_padding_mask, scale)
    compute = q.dtype if q.dtype in (torch.float32, torch.float64) else torch.float32
    qc, kc, vc = q.to(compute), k.to(compute), v.to(compute)
    s = torch.matmul(qc, kc.transpose(-1, -2)) * scale                     # (B, H, Nq, Nk)
    if key_padding_mask is not None:
        s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    # No keys at all (Nk = 0) is the extreme fully masked case; amax of an empty row would raise.
    m = s.amax(dim=-1, keepdim=True) if s.shape[-1] else s.new_full((*s.shape[:-1], 1), float("-inf"))
    # A fully masked row has m = −inf; shifting by 0 instead makes every p exactly 0, not NaN.
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m)).detach()
    p = torch.exp(s - m)
    denom = p.sum(dim=-1, keepdim=True)
    out = torch.matmul(p, vc) / torch.where(denom > 0, denom, torch.ones_like(denom))
    return out.to(q.dtype)
