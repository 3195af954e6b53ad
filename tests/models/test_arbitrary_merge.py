"""A painting's keys merged by k-means (`models/arbitrary/merge.py`) against the float64 attention
over every token: exact where merged keys coincide, close on clustered keys and closer than the
strided subsample of as many tokens, the statistics the block reads from it, and the edge cases
(batch 2, empty clusters, nothing to merge, bad arguments)."""
from __future__ import annotations

import pytest
import torch

from styleforge.models.arbitrary.merge import merge_style_code, merge_style_level
from styleforge.models.arbitrary.transfer import AdaAttnBlock, StyleLevel, biased_attention

QK, HEADS = 8, 2


def reference(q: torch.Tensor, level: StyleLevel) -> torch.Tensor:
    """softmax(q kᵀ/√d + bias) [v, v²] in float64 over the code's tokens."""
    bias = level.bias.double() if level.bias is not None else 0.0
    s = q.double() @ level.k[..., :QK].double().transpose(-1, -2) * QK ** -0.5 + bias
    return s.softmax(-1) @ level.v.double()


def code_from(keys: torch.Tensor, values: torch.Tensor, width: int = 2 * QK) -> StyleLevel:
    """keys (B, H, N, QK), values (B, H, N, C/H) → a StyleLevel as `encode_style` lays it out."""
    b, h, n, _ = keys.shape
    k = torch.nn.functional.pad(keys, (0, width - QK))
    return StyleLevel(k, torch.cat([values, values * values], -1), torch.zeros(b, 1, h * values.shape[-1]),
                      torch.ones(b, 1, h * values.shape[-1]))


def clustered(gen: torch.Generator, b: int, n: int, centres: int, spread: float) -> torch.Tensor:
    """(b, HEADS, n, QK) keys around `centres` random centres per head, in a shuffled order."""
    c = torch.randn(b, HEADS, centres, QK, generator=gen, dtype=torch.float64) * 2
    pick = torch.randint(0, centres, (b, HEADS, n), generator=gen)
    keys = torch.gather(c, 2, pick[..., None].expand(-1, -1, -1, QK))
    return keys + spread * torch.randn(keys.shape, generator=gen, dtype=torch.float64)


def test_equal_keys_merge_exactly():
    """Each distinct key repeated 1–5 times with different values: merged to one token per distinct
    key, the attention (hence mean and std) is the full one's to float64 rounding."""
    gen = torch.Generator().manual_seed(0)
    distinct = torch.randn(2, HEADS, 24, QK, generator=gen, dtype=torch.float64)
    repeats = torch.randint(1, 6, (24,), generator=gen)
    keys = distinct.repeat_interleave(repeats, dim=2)
    values = torch.randn(2, HEADS, keys.shape[2], 4, generator=gen, dtype=torch.float64)
    level = code_from(keys, values)
    merged = merge_style_level(level, 24, QK)
    assert merged.k.shape == (2, HEADS, 24, 2 * QK) and merged.bias.shape == (2, HEADS, 1, 24)
    assert torch.all(merged.k[..., QK:] == 0)                 # the CUDA layout's zero padding kept
    q = torch.randn(2, HEADS, 37, QK, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(reference(q, merged), reference(q, level), rtol=1e-6, atol=1e-9)


def test_clustered_keys_close_and_closer_than_subsampling():
    gen = torch.Generator().manual_seed(1)
    keys = clustered(gen, 1, 1024, 64, spread=0.05)
    values = torch.randn(1, HEADS, 1024, 4, generator=gen, dtype=torch.float64)
    level = code_from(keys, values)
    q = torch.randn(1, HEADS, 200, QK, generator=gen, dtype=torch.float64)
    want = reference(q, level)
    merged = reference(q, merge_style_level(level, 128, QK))
    strided = reference(q, StyleLevel(level.k[:, :, ::8], level.v[:, :, ::8], level.mean, level.std))
    err_merged = (merged - want).abs().mean() / want.abs().mean()
    err_strided = (strided - want).abs().mean() / want.abs().mean()
    assert err_merged < 0.02
    assert err_merged < err_strided / 3


def test_block_statistics_read_the_bias():
    """`AdaAttnBlock.statistics` on a merged code (the bias path) equals it on the full code where
    merged keys coincide; fp32 on fp64 reference inputs."""
    torch.manual_seed(2)
    block = AdaAttnBlock(channels=8, key_channels=12, heads=HEADS, qk_dim=QK, ffn_hidden=8).double()
    with torch.no_grad():
        style = torch.randn(1, 8, 6, 5, dtype=torch.float64)
        style_keys = torch.randn(1, 12, 6, 5, dtype=torch.float64)
        full = block.encode_style(style.repeat(1, 1, 1, 3), style_keys.repeat(1, 1, 1, 3))   # each key thrice
        merged = merge_style_level(full, 30, QK)
        assert merged.k.shape[2] == 30
        content_keys = torch.randn(1, 12, 7, 9, dtype=torch.float64)
        for got, want in zip(block.statistics(content_keys, merged), block.statistics(content_keys, full)):
            torch.testing.assert_close(got, want, rtol=1e-7, atol=1e-9)
        q = torch.randn(1, HEADS, 5, merged.k.shape[-1], dtype=torch.float32)
        out = biased_attention(q, merged.k.float(), merged.v.float(), merged.bias.float(), QK ** -0.5)
        assert out.dtype == torch.float32


def test_empty_clusters_are_finite_and_weightless():
    """All keys equal: every cluster but one ends empty; those weigh nothing, nothing is NaN."""
    keys = torch.ones(1, HEADS, 50, QK, dtype=torch.float64)
    values = torch.randn(1, HEADS, 50, 4, dtype=torch.float64)
    level = code_from(keys, values)
    merged = merge_style_level(level, 10, QK)
    assert torch.isfinite(merged.bias).all() and torch.isfinite(merged.k).all() and torch.isfinite(merged.v).all()
    q = torch.randn(1, HEADS, 6, QK, dtype=torch.float64)
    torch.testing.assert_close(reference(q, merged), reference(q, level), rtol=1e-6, atol=1e-9)


def test_deterministic_and_leaves_small_codes_alone():
    gen = torch.Generator().manual_seed(3)
    level = code_from(clustered(gen, 1, 300, 20, 0.1).float(), torch.randn(1, HEADS, 300, 4, generator=gen))
    a, b = merge_style_level(level, 50, QK), merge_style_level(level, 50, QK)
    assert torch.equal(a.k, b.k) and torch.equal(a.v, b.v) and torch.equal(a.bias, b.bias)
    assert a.k.dtype == torch.float32 and a.bias.dtype == torch.float32   # fp32 code: fp32 bias
    assert merge_style_level(level, 300, QK) is level
    code = merge_style_code({"relu3_1": level, "relu4_1": level}, {"relu3_1": 50}, QK)
    assert code["relu3_1"].k.shape[2] == 50 and code["relu4_1"] is level
    assert code["relu3_1"].to(dtype=torch.float64).bias is not None


def test_bad_arguments_say_why():
    level = code_from(torch.randn(1, HEADS, 20, QK), torch.randn(1, HEADS, 20, 4))
    with pytest.raises(ValueError, match="tokens must be"):
        merge_style_level(level, 0, QK)
    with pytest.raises(ValueError, match="already merged"):
        merge_style_level(merge_style_level(level, 5, QK), 3, QK)
