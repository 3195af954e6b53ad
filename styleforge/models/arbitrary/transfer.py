"""Attention-weighted style statistics per content position: the model's transformer block.

AdaAttN (Liu et al. 2021, "AdaAttN: Revisit Attention Mechanism in Arbitrary Neural Style
Transfer", ICCV) computed with styleforge's ops: for one VGG level with content features Fc and
style features Fs (C channels),

    q = Wq·[norm(Fc), norm(pool(Fc⁻))],  k = Wk·[norm(Fs), norm(pool(Fs⁻))]   (Fc⁻: the level above)
    A = softmax(q kᵀ / √d)                       per head, one `styleforge::attention` call
    M = A·Fs,  S = √(A·Fs² − M²)                 the per-position style mean and std
    y = S ⊙ norm(Fc) + M,  then  y + FFN(LN(y))  (`styleforge::ffn`, fc2 zero-initialised)

norm is the per-channel mean/std normalisation over positions (instance norm without affine).
Mean and second moment come out of ONE attention call: the values are [v, v²] per head, where
v = (Fs − μs)/σs is standardised first so E[v²] − E[v]² does not cancel catastrophically in
bf16; M and S are mapped back with μs, σs (an exact identity). Heads split the C channels of
the values (C/H each); q and k have `qk_dim` per head, zero-padded to the values' 2·C/H (zeros
change no dot product). Differences from AdaAttN: no value projection (the statistics are
those of the VGG features themselves), one level of shallower features in q/k instead of all,
multi-head, and the FFN refinement. Style tokens are subsampled to at most `max_style_tokens`
(a strided grid keeps the value distribution; pooling would shrink the std), so the cost is
O(content pixels × max_style_tokens): linear in content pixels. No positional encoding.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .ops import attention, ffn

EPS = 1e-5


def wide(x: torch.Tensor) -> torch.Tensor:
    """x in fp32, or fp64 when it is fp64 (the tests' reference precision)."""
    return x if x.dtype == torch.float64 else x.float()


def mean_std(x: torch.Tensor, eps: float = EPS) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std over positions of (B, C, H, W), in fp32: (B, C, 1, 1) each."""
    xf = wide(x)
    var, mean = torch.var_mean(xf, dim=(2, 3), keepdim=True, correction=0)
    return mean, (var + eps).sqrt()


def normalized(x: torch.Tensor) -> torch.Tensor:
    mean, std = mean_std(x)
    return ((wide(x) - mean) / std).to(x.dtype)


def subsample_grid(x: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """(B, C, H, W) → every s-th row and column (centred) so that H'·W' ≤ max_tokens."""
    h, w = x.shape[-2:]
    s = max(1, math.ceil(math.sqrt(h * w / max_tokens)))
    while math.ceil(h / s) * math.ceil(w / s) > max_tokens:
        s += 1
    if s == 1:
        return x
    return x[..., (h - 1) % s // 2::s, (w - 1) % s // 2::s]


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype matmuls run in here: autocast's when it is on (custom ops are not autocast)."""
    if torch.is_autocast_enabled(x.device.type):
        return torch.get_autocast_dtype(x.device.type)
    return x.dtype


def tokens(x: torch.Tensor) -> torch.Tensor:
    """(B, C, H, W) → (B, H·W, C)."""
    return x.flatten(2).transpose(1, 2)


@dataclass
class StyleLevel:
    """One painting's precomputed keys and values at one level (cached per painting)."""
    k: torch.Tensor        # (B, H, Ns, D) keys, zero-padded to D
    v: torch.Tensor        # (B, H, Ns, D) [v, v²] standardised values
    mean: torch.Tensor     # (B, 1, C) fp32 μs
    std: torch.Tensor      # (B, 1, C) fp32 σs
    # (B, H, 1, Ns) log of the tokens each key stands for (a merged code, `merge.py`), fp32 (fp64
    # for an fp64 code); None: one token each
    bias: torch.Tensor | None = None

    def to(self, device=None, dtype=None) -> StyleLevel:
        return StyleLevel(self.k.to(device, dtype), self.v.to(device, dtype), self.mean.to(device),
                          self.std.to(device), None if self.bias is None else self.bias.to(device))


def biased_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor,
                     scale: float) -> torch.Tensor:
    """softmax(scale · q kᵀ + bias) v for a merged code, in fp32 (fp64 for fp64): plain PyTorch on
    any device (merged codes are made for the OpenVINO CPU path, which exports this as one SDPA)."""
    dt = wide(q).dtype
    s = torch.matmul(q.to(dt), k.to(dt).transpose(-1, -2)) * scale + bias.to(dt)
    return torch.matmul(torch.softmax(s, dim=-1), v.to(dt)).to(q.dtype)


class AdaAttnBlock(nn.Module):
    """One level: content (B, C, H, W) + cached StyleLevel → stylized features (B, C, H, W)."""

    def __init__(self, channels: int, key_channels: int, heads: int, qk_dim: int, ffn_hidden: int):
        super().__init__()
        if channels % heads:
            raise ValueError(f"AdaAttnBlock: {channels} channels are not divisible by {heads} heads")
        self.channels, self.heads, self.qk_dim = channels, heads, qk_dim
        self.head_dim = 2 * channels // heads            # [v, v²] per head
        if qk_dim > self.head_dim:
            raise ValueError(f"AdaAttnBlock: qk_dim {qk_dim} > value head dim {self.head_dim}")
        self.q_proj = nn.Linear(key_channels, heads * qk_dim)
        self.k_proj = nn.Linear(key_channels, heads * qk_dim)
        self.norm = nn.LayerNorm(channels)
        self.fc1 = nn.Linear(channels, ffn_hidden)
        self.fc2 = nn.Linear(ffn_hidden, channels)
        nn.init.zeros_(self.fc2.weight)                  # the block starts as plain AdaAttN
        nn.init.zeros_(self.fc2.bias)

    def _heads(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        """(B, N, H·dim) → (B, H, N, head_dim), zero-padded."""
        b, n, _ = x.shape
        x = x.view(b, n, self.heads, dim).transpose(1, 2)
        return F.pad(x, (0, self.head_dim - dim)) if dim < self.head_dim else x

    def encode_style(self, style: torch.Tensor, style_keys: torch.Tensor) -> StyleLevel:
        """style (B, C, Hs, Ws) raw features, style_keys (B, Ck, Hs, Ws) normalised key features."""
        mean, std = mean_std(style)                                  # (B, C, 1, 1)
        v = tokens(((wide(style) - mean) / std).to(style.dtype))   # (B, Ns, C)
        b, n, c = v.shape
        v = v.view(b, n, self.heads, c // self.heads).transpose(1, 2)
        k = self._heads(self.k_proj(tokens(style_keys)), self.qk_dim)
        return StyleLevel(k, torch.cat([v, v * v], dim=-1).to(k.dtype),
                          mean.view(b, 1, c), std.view(b, 1, c))

    def statistics(self, content_keys: torch.Tensor, style: StyleLevel) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-position style mean and std, (B, N, C) fp32 each."""
        q = self._heads(self.q_proj(tokens(content_keys)), self.qk_dim)
        q = q.to(compute_dtype(content_keys))
        if style.bias is None:
            out = attention(q, style.k.to(q.dtype), style.v.to(q.dtype), None, self.qk_dim ** -0.5)
        else:
            out = biased_attention(q, style.k, style.v, style.bias, self.qk_dim ** -0.5)
        b, h, n, _ = out.shape
        half = self.head_dim // 2
        m = wide(out[..., :half])
        var = (wide(out[..., half:]) - m * m).clamp_min(0.0)
        m = m.transpose(1, 2).reshape(b, n, h * half)
        s = (var + EPS).sqrt().transpose(1, 2).reshape(b, n, h * half)
        return style.mean + style.std * m, style.std * s

    def forward(self, content: torch.Tensor, content_keys: torch.Tensor, style: StyleLevel) -> torch.Tensor:
        b, c, hh, ww = content.shape
        mean, std = self.statistics(content_keys, style)
        dt = compute_dtype(content)
        y = (std * wide(tokens(normalized(content))) + mean).to(dt)             # (B, N, C)
        w1, b1, w2, b2 = (t.to(dt) for t in (self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias))
        y = ffn(self.norm(y).to(dt), w1, b1, w2, b2, residual=y, gelu="tanh")
        return y.transpose(1, 2).reshape(b, c, hh, ww)
