"""`MultiheadAttention`: an `nn.MultiheadAttention` drop-in that runs `styleforge.kernels.attention`.

Same constructor arguments (embed_dim, num_heads, dropout=0 only, bias, kdim, vdim, batch_first)
and the same parameter names, so an `nn.MultiheadAttention` state dict loads with strict=True:
`in_proj_weight` when kdim = vdim = embed_dim, else `q_proj_weight`/`k_proj_weight`/`v_proj_weight`,
plus `in_proj_bias` and `out_proj`. forward(query, key, value, key_padding_mask=None,
need_weights=False) returns (out, None). Not supported (refused with a message): attention
weights, attn_mask, dropout, add_bias_kv / add_zero_attn, float key padding masks. One
difference: a query whose keys are all masked gets zeros (PyTorch gives NaN or zeros by backend).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..kernels.attention import attention


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device=None, dtype=None):
        super().__init__()
        if dropout != 0.0:
            raise ValueError("MultiheadAttention: dropout must be 0 (the fused kernel has no dropout)")
        if embed_dim % num_heads != 0:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        kw = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads, self.batch_first = embed_dim, num_heads, batch_first
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = nn.Parameter(torch.empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = nn.Parameter(torch.empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = nn.Parameter(torch.empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim, **kw)) if bias else None
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **kw)
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:   # nn.MultiheadAttention's initialisation
                nn.init.xavier_uniform_(w)
        if bias:
            nn.init.zeros_(self.out_proj.bias)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                key_padding_mask: torch.Tensor | None = None, need_weights: bool = False,
                attn_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, None]:
        if need_weights or attn_mask is not None:
            raise ValueError("MultiheadAttention: need_weights=True and attn_mask are unsupported "
                             "(the flash kernel never forms the attention matrix)")
        unbatched = query.dim() == 2
        if unbatched:   # (L, E): one sequence
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif not self.batch_first:   # (L, N, E) → (N, L, E)
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        bq, bk, bv = (None, None, None) if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        b, nq, nk, h = query.shape[0], query.shape[1], key.shape[1], self.num_heads
        # (B, N, E) → (B, H, N, E/H)
        q = F.linear(query, wq, bq).view(b, nq, h, e // h).transpose(1, 2)
        k = F.linear(key, wk, bk).view(b, nk, h, e // h).transpose(1, 2)
        v = F.linear(value, wv, bv).view(b, nk, h, e // h).transpose(1, 2)
        if key_padding_mask is not None and key_padding_mask.dtype != torch.bool:
            raise ValueError(f"MultiheadAttention: key_padding_mask must be bool (True = ignore), got "
                             f"{key_padding_mask.dtype}")
        out = attention(q, k, v, key_padding_mask, (e // h) ** -0.5)
        out = self.out_proj(out.transpose(1, 2).reshape(b, nq, e))
        if unbatched:
            return out.squeeze(0), None
        return (out if self.batch_first else out.transpose(0, 1)), None
