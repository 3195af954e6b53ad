"""Pure-PyTorch twins of the arbitrary-style model's glue ops: test oracle, CPU path, fallback.

The fused arbitrary engine (`engine/arbitrary_fused.py`) runs cuDNN convolutions with no padding
on buffers these ops fill, so everything between two convolutions is one pass over memory:

- `feature_pad(x, bias, skip, relu, resample, pad, keep, pool)`: v = resample(act(x + bias)) + skip
  (act: ReLU or identity; resample: none, 2×2 max-pool, ×2 nearest), rounded to x's dtype, then
  reflection-padded by `pad`; also v itself (`keep`) and its 2×2 average (`pool`).
- `norm_affine(x, eps)`: per (sample, channel) the (scale, shift) that normalise x over its positions
  (scale = 1/√(var + eps), shift = −mean·scale), fp32.
- `adaattn_stats(o, x, ...)`: AdaAttN's output from the attention's [E v, E v²] per head:
  y = σs·√(max(E v² − (E v)², 0) + eps) ⊙ norm(x) + μs + σs·E v, and LayerNorm(y), as tokens.
- `detail_upscale(content, diff)`: clamp(bicubic(diff) + luma(content), 0, 255) at content's size
  (the stroke scale's way back: `engine/stroke.py`).

Half/bf16 inputs compute in fp32; fp32/fp64 in their own dtype (fp64: the tests' oracle).
`check_*` state the argument rules that the CUDA bindings mirror.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

RESAMPLES = ("none", "maxpool", "up")     # resample codes 0, 1, 2
LUMA = (0.299, 0.587, 0.114)


def wide_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def _vector(name: str, op: str, t: torch.Tensor | None, size: int, x: torch.Tensor) -> None:
    if t is None:
        return
    if t.dim() != 1 or t.shape[0] != size or not t.is_floating_point() or t.device != x.device:
        raise ValueError(f"{op}: {name} must be a floating ({size},) tensor on {x.device}, got {t.dtype} "
                         f"{tuple(t.shape)} on {t.device}")


def resampled_size(h: int, w: int, resample: int) -> tuple[int, int]:
    if resample == 1:
        return h // 2, w // 2
    if resample == 2:
        return 2 * h, 2 * w
    return h, w


def check_feature_pad(x, bias, skip, relu, resample, pad, keep, pool) -> None:
    op = "feature_pad"
    if x.dim() != 4 or not x.is_floating_point():
        raise ValueError(f"{op}: x must be a floating 4-D (N, C, H, W) tensor, got {x.dtype} {tuple(x.shape)}")
    if resample not in (0, 1, 2):
        raise ValueError(f"{op}: resample must be 0 (none), 1 (2×2 max-pool) or 2 (×2 nearest), got {resample}")
    if pad not in (0, 1):
        raise ValueError(f"{op}: pad must be 0 or 1, got {pad}")
    n, c, h, w = x.shape
    if resample == 1 and (h % 2 or w % 2):
        raise ValueError(f"{op}: max-pooling needs even H and W, got {h}x{w}")
    ho, wo = resampled_size(h, w, resample)
    if pad and (ho < 2 or wo < 2):
        raise ValueError(f"{op}: reflection padding needs a plane of at least 2x2, got {ho}x{wo}")
    if pool and (ho % 2 or wo % 2):
        raise ValueError(f"{op}: pool needs an even output plane, got {ho}x{wo}")
    if keep and not pad:
        raise ValueError(f"{op}: keep is for padded outputs (with pad 0 the output is the plain one)")
    _vector("bias", op, bias, c, x)
    if skip is not None and (tuple(skip.shape) != (n, c, ho, wo) or skip.dtype != x.dtype
                             or skip.device != x.device):
        raise ValueError(f"{op}: skip must be {x.dtype} ({n}, {c}, {ho}, {wo}) on {x.device}, got "
                         f"{skip.dtype} {tuple(skip.shape)} on {skip.device}")


def feature_pad(x: torch.Tensor, bias: torch.Tensor | None = None, skip: torch.Tensor | None = None,
                relu: bool = False, resample: int = 0, pad: int = 1, keep: bool = False,
                pool: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """→ (padded v, v or empty, avg_pool2d(v, 2) or empty), channels_last, x's dtype."""
    check_feature_pad(x, bias, skip, relu, resample, pad, keep, pool)
    wd = wide_dtype(x.dtype)
    v = x.to(wd)
    if bias is not None:
        v = v + bias.to(wd).view(1, -1, 1, 1)
    if relu:
        v = v.clamp_min(0)
    if resample == 1:
        v = F.max_pool2d(v, 2)
    elif resample == 2:
        v = F.interpolate(v, scale_factor=2.0, mode="nearest")
    if skip is not None:
        v = v + skip.to(wd)
    v = v.to(x.dtype)
    out = F.pad(v, (pad,) * 4, mode="reflect") if pad else v
    cl = torch.channels_last
    empty = x.new_empty(0)
    plain = v.contiguous(memory_format=cl) if keep else empty
    pooled = F.avg_pool2d(v.to(wd), 2).to(x.dtype).contiguous(memory_format=cl) if pool else empty
    return out.contiguous(memory_format=cl), plain, pooled


def check_norm_affine(x, eps) -> None:
    if x.dim() != 4 or not x.is_floating_point() or x.shape[2] * x.shape[3] < 1:
        raise ValueError(f"norm_affine: x must be a floating 4-D (N, C, H, W) tensor with positions, got "
                         f"{x.dtype} {tuple(x.shape)}")
    if not eps > 0:
        raise ValueError(f"norm_affine: eps must be > 0, got {eps}")


def norm_affine(x: torch.Tensor, eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """→ (scale, shift), (N, C) each, fp32 (fp64 for fp64 x): x·scale + shift is x normalised."""
    check_norm_affine(x, eps)
    wd = torch.float64 if x.dtype == torch.float64 else torch.float32
    var, mean = torch.var_mean(x.to(wd), dim=(2, 3), correction=0)
    scale = torch.rsqrt(var + eps)
    return scale, -mean * scale


def check_adaattn_stats(o, x, x_scale, x_shift, s_mean, s_std, ln_weight, ln_bias, eps, ln_eps) -> None:
    op = "adaattn_stats"
    if o.dim() != 4 or x.dim() != 4:
        raise ValueError(f"{op}: o must be (B, H, N, D) and x (B, C, h, w), got {tuple(o.shape)} and "
                         f"{tuple(x.shape)}")
    b, heads, n, d = o.shape
    c = heads * (d // 2)
    if d % 2 or tuple(x.shape[:2]) != (b, c) or x.shape[2] * x.shape[3] != n:
        raise ValueError(f"{op}: x {tuple(x.shape)} does not fit o {tuple(o.shape)} (C = H·D/2 = {c}, "
                         f"h·w = N = {n})")
    if x.dtype != o.dtype or x.device != o.device:
        raise ValueError(f"{op}: x ({x.dtype} on {x.device}) must match o ({o.dtype} on {o.device})")
    for name, t in (("x_scale", x_scale), ("x_shift", x_shift), ("s_mean", s_mean), ("s_std", s_std)):
        if t.numel() != b * c or not t.is_floating_point() or t.device != o.device:
            raise ValueError(f"{op}: {name} must hold (B, C) = ({b}, {c}) floats on {o.device}, got "
                             f"{t.dtype} {tuple(t.shape)} on {t.device}")
    _vector("ln_weight", op, ln_weight, c, o)
    _vector("ln_bias", op, ln_bias, c, o)
    if not (eps > 0 and ln_eps > 0):
        raise ValueError(f"{op}: eps and ln_eps must be > 0, got {eps} and {ln_eps}")


def adaattn_stats(o: torch.Tensor, x: torch.Tensor, x_scale: torch.Tensor, x_shift: torch.Tensor,
                  s_mean: torch.Tensor, s_std: torch.Tensor, ln_weight: torch.Tensor, ln_bias: torch.Tensor,
                  eps: float = 1e-5, ln_eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """o (B, H, N, D): per head [E v, E v²] (D/2 each); x (B, C, h, w) the content features.
    → (y, LayerNorm(y)), (B, N, C) each in o's dtype (y rounded before its LayerNorm)."""
    check_adaattn_stats(o, x, x_scale, x_shift, s_mean, s_std, ln_weight, ln_bias, eps, ln_eps)
    b, heads, n, d = o.shape
    half, c = d // 2, heads * (d // 2)
    wd = wide_dtype(o.dtype)
    ow = o.to(wd)
    m = ow[..., :half].transpose(1, 2).reshape(b, n, c)
    e2 = ow[..., half:].transpose(1, 2).reshape(b, n, c)
    s = torch.sqrt((e2 - m * m).clamp_min(0) + eps)
    xt = x.to(wd).flatten(2).transpose(1, 2)                                   # (B, N, C)
    norm = xt * x_scale.to(wd).reshape(b, 1, c) + x_shift.to(wd).reshape(b, 1, c)
    mean, std = s_mean.to(wd).reshape(b, 1, c), s_std.to(wd).reshape(b, 1, c)
    y = (std * s * norm + (mean + std * m)).to(o.dtype)
    y_ln = F.layer_norm(y.to(wd), (c,), ln_weight.to(wd), ln_bias.to(wd), ln_eps).to(o.dtype)
    return y.contiguous(), y_ln.contiguous()


def check_detail_upscale(content, diff) -> None:
    op = "detail_upscale"
    if content.dim() != 4 or content.shape[1] != 3 or diff.dim() != 4 or diff.shape[:2] != content.shape[:2]:
        raise ValueError(f"{op}: content must be (N, 3, H, W) and diff (N, 3, h, w), got {tuple(content.shape)} "
                         f"and {tuple(diff.shape)}")
    if content.dtype != diff.dtype or content.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"{op}: content and diff must both be float32 (or float64), got {content.dtype} and "
                         f"{diff.dtype}")
    if content.device != diff.device:
        raise ValueError(f"{op}: content is on {content.device}, diff on {diff.device}")


def luma(image: torch.Tensor) -> torch.Tensor:
    return image[:, 0:1] * LUMA[0] + image[:, 1:2] * LUMA[1] + image[:, 2:3] * LUMA[2]


def detail_upscale(content: torch.Tensor, diff: torch.Tensor) -> torch.Tensor:
    """clamp(bicubic(diff → content's size) + luma(content), 0, 255), content's dtype, NCHW."""
    check_detail_upscale(content, diff)
    up = F.interpolate(diff, size=tuple(content.shape[-2:]), mode="bicubic", align_corners=False)
    return (up + luma(content)).clamp_(0, 255).contiguous()
