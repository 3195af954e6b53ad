"""The arbitrary model's glue ops: the twins against float64 formulas written out here (CPU), and
the CUDA kernels against the twins (GPU; every shape rule: odd planes, 3-row reflections, skips,
pooling, ×2 upsampling, C = 256…1024)."""
from __future__ import annotations

import pytest
import torch

from styleforge import kernels
from styleforge.kernels.reference import arbitrary_glue as ref

CL = torch.channels_last


def _x(n, c, h, w, dtype=torch.float64, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, h, w, generator=g, dtype=torch.float64) * 2
    return x.to(device, dtype).contiguous(memory_format=CL)


def _reflect(i: int, size: int) -> int:
    return -i if i < 0 else (2 * (size - 1) - i if i >= size else i)


# ---- twins, float64, CPU ------------------------------------------------------------------------

@pytest.mark.parametrize("resample", [0, 1, 2])
@pytest.mark.parametrize("relu", [False, True])
def test_feature_pad_twin_is_bias_act_resample_skip_then_reflect(resample, relu):
    x = _x(2, 8, 8, 4)
    bias = torch.randn(8, dtype=torch.float64)
    ho, wo = ref.resampled_size(8, 4, resample)
    skip = _x(2, 8, ho, wo, seed=1)
    out, plain, pooled = ref.feature_pad(x, bias, skip, relu, resample, 1, True, True)
    # Written out element by element.
    want = torch.empty(2, 8, ho, wo, dtype=torch.float64)
    for i in range(ho):
        for j in range(wo):
            if resample == 1:
                v = x[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2] + bias.view(1, -1, 1, 1)
                v = (v.clamp_min(0) if relu else v).amax(dim=(2, 3))
            else:
                si, sj = (i // 2, j // 2) if resample == 2 else (i, j)
                v = x[:, :, si, sj] + bias
                v = v.clamp_min(0) if relu else v
            want[:, :, i, j] = v + skip[:, :, i, j]
    assert torch.allclose(plain, want, atol=1e-12)
    for i in range(-1, ho + 1):
        for j in range(-1, wo + 1):
            assert torch.equal(out[:, :, i + 1, j + 1], want[:, :, _reflect(i, ho), _reflect(j, wo)])
    assert torch.allclose(pooled, (want[:, :, 0::2, 0::2] + want[:, :, 0::2, 1::2] + want[:, :, 1::2, 0::2]
                                   + want[:, :, 1::2, 1::2]) / 4, atol=1e-12)
    assert out.is_contiguous(memory_format=CL) and plain.is_contiguous(memory_format=CL)


def test_feature_pad_rules():
    x = _x(1, 8, 5, 4)
    with pytest.raises(ValueError, match="even H and W"):
        ref.feature_pad(x, resample=1)
    with pytest.raises(ValueError, match="keep is for padded"):
        ref.feature_pad(x, pad=0, keep=True)
    with pytest.raises(ValueError, match="skip must be"):
        ref.feature_pad(x, skip=_x(1, 8, 4, 4))
    with pytest.raises(ValueError, match="at least 2x2"):
        ref.feature_pad(_x(1, 8, 1, 4))
    with pytest.raises(ValueError, match="pool needs an even"):
        ref.feature_pad(x, pool=True)


def test_norm_affine_twin_normalises():
    x = _x(2, 16, 7, 5) + 3.0
    scale, shift = ref.norm_affine(x, 1e-5)
    y = x * scale.view(2, 16, 1, 1) + shift.view(2, 16, 1, 1)
    assert torch.allclose(y.mean(dim=(2, 3)), torch.zeros(2, 16, dtype=torch.float64), atol=1e-12)
    var = x.var(dim=(2, 3), unbiased=False)
    assert torch.allclose(y.var(dim=(2, 3), unbiased=False), var / (var + 1e-5), atol=1e-12)


def test_adaattn_stats_twin_is_the_transfer_blocks_formula():
    from styleforge.models.arbitrary.transfer import AdaAttnBlock, StyleLevel
    torch.manual_seed(0)
    block = AdaAttnBlock(16, 24, 2, 4, 16).double()
    fc = _x(1, 16, 3, 5)
    keys = _x(1, 24, 3, 5, seed=2)
    style = block.encode_style(_x(1, 16, 4, 4, seed=3), _x(1, 24, 4, 4, seed=4))
    q = block._heads(block.q_proj(keys.flatten(2).transpose(1, 2)), block.qk_dim)
    o = kernels.attention(q, style.k, style.v, None, block.qk_dim ** -0.5)
    mean, std = ref.norm_affine(fc, 1e-5)
    y, y_ln = ref.adaattn_stats(o, fc, mean, std, style.mean.view(1, -1), style.std.view(1, -1),
                                block.norm.weight, block.norm.bias, 1e-5, block.norm.eps)
    # The block's own statistics (mean/std per position) and normalisation:
    m, s = block.statistics(keys, style)
    from styleforge.models.arbitrary.transfer import normalized
    want = s * normalized(fc).flatten(2).transpose(1, 2) + m
    assert torch.allclose(y, want, atol=1e-10)
    assert torch.allclose(y_ln, block.norm(want), atol=1e-10)
    assert isinstance(style, StyleLevel)


def test_detail_upscale_twin_is_restore_detail():
    from styleforge.engine.stroke import luma, restore_detail
    g = torch.Generator().manual_seed(0)
    content = torch.rand(1, 3, 50, 70, generator=g, dtype=torch.float64) * 255
    small = torch.rand(1, 3, 20, 28, generator=g, dtype=torch.float64) * 255
    small_out = torch.rand(1, 3, 20, 28, generator=g, dtype=torch.float64) * 255
    got = ref.detail_upscale(content, small_out - luma(small))
    want = restore_detail(content, small, small_out)
    assert torch.allclose(got, want.double(), atol=1e-3)   # restore_detail computes in fp32


# ---- CUDA kernels against the twins -------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,resample,skip,pool,pad", [
    ((1, 64, 36, 64), 0, False, False, 1), ((2, 128, 18, 32), 0, False, True, 1), ((1, 64, 36, 64), 1, False, False, 1),
    ((1, 256, 9, 16), 2, True, False, 1), ((1, 512, 5, 8), 0, False, False, 0), ((1, 8, 3, 3), 0, True, False, 1),
    ((1, 16, 3, 5), 0, False, False, 1), ((1, 8, 6, 6), 1, False, False, 1), ((1, 24, 7, 9), 2, False, True, 1)])
def test_feature_pad_kernel_matches_twin(loaded, dtype, shape, resample, skip, pool, pad):
    x = _x(*shape, dtype=dtype, device="cuda")
    bias = torch.randn(shape[1], device="cuda")
    ho, wo = ref.resampled_size(shape[2], shape[3], resample)
    s = _x(shape[0], shape[1], ho, wo, dtype=dtype, device="cuda", seed=5) if skip else None
    for relu in (False, True):
        got = kernels.feature_pad(x, bias, s, relu=relu, resample=resample, pad=pad, keep=bool(pad), pool=pool)
        want = ref.feature_pad(x, bias, s, relu, resample, pad, bool(pad), pool)
        for g, w in zip(got, want):
            assert g.shape == w.shape and (g.dim() != 4 or g.is_contiguous(memory_format=CL))
            torch.testing.assert_close(g.float(), w.float(), rtol=0, atol=0)   # same fp32 math, same rounding


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 256, 72, 128), (2, 128, 9, 16), (1, 512, 1, 3), (1, 64, 200, 300)])
def test_norm_affine_kernel_matches_float64(loaded, dtype, shape):
    x = (_x(*shape, dtype=dtype, device="cuda") + 5).contiguous(memory_format=CL)
    scale, shift = kernels.norm_affine(x, 1e-5)
    ws, wsh = ref.norm_affine(x.double(), 1e-5)
    torch.testing.assert_close(scale.double(), ws, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(shift.double(), wsh, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("b,heads,n,d", [(1, 8, 1152, 64), (1, 8, 288, 128), (2, 4, 77, 128), (1, 16, 50, 128)])
def test_adaattn_stats_kernel_matches_twin(loaded, dtype, b, heads, n, d):
    c = heads * d // 2
    g = torch.Generator().manual_seed(0)
    m = torch.randn(b, heads, n, d // 2, generator=g)
    o = torch.cat([m, m * m + torch.rand(b, heads, n, d // 2, generator=g)], dim=-1).to("cuda", dtype)
    x = _x(b, c, 1, n, dtype=dtype, device="cuda")
    vec = lambda: torch.rand(b, c, generator=g).cuda() + 0.5  # noqa: E731
    ln_w, ln_b = torch.randn(c, generator=g).cuda(), torch.randn(c, generator=g).cuda()
    args = (o, x, vec(), vec() - 1, vec(), vec(), ln_w, ln_b, 1e-5, 1e-5)
    got = kernels.adaattn_stats(*args)
    want = ref.adaattn_stats(*args)
    for gt, wt in zip(got, want):
        assert gt.shape == (b, n, c)
        err = float((gt.float() - wt.float()).norm() / wt.float().norm())
        assert err < (4e-3 if dtype == torch.bfloat16 else 5e-4), err


@pytest.mark.gpu
@pytest.mark.parametrize("size,small", [((1080, 1920), (288, 512)), ((2160, 3840), (288, 512)), ((75, 130), (30, 52)),
                                        ((64, 64), (64, 64))])
def test_detail_upscale_kernel_matches_twin(loaded, size, small):
    g = torch.Generator().manual_seed(0)
    content = (torch.rand(1, 3, *size, generator=g) * 255).cuda()
    diff = (torch.rand(1, 3, *small, generator=g) * 300 - 150).cuda()
    got = kernels.detail_upscale(content, diff)
    want = ref.detail_upscale(content.double(), diff.double()).float()
    # fp32 source coordinates (as PyTorch's own kernel) against fp64: 1e-4 of the 0–255 range.
    torch.testing.assert_close(got, want, rtol=0, atol=2.5e-2)
