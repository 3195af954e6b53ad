"""`torch.ops.styleforge.feature_pad`, `norm_affine`, `adaattn_stats`, `detail_upscale`: the
arbitrary-style model's glue between cuDNN convolutions and our attention/FFN kernels.

Schemas, reference/fake registrations and Python entries, as in `instance_norm.py`: the twins in
`reference/arbitrary_glue.py` serve CPU (and CUDA until the extension loads);
`csrc/arbitrary/arbitrary_glue_binding.cpp` adds the CUDA kernels, which take fp16/bf16 (fp32 for
`detail_upscale`) with channels a multiple of 8. Other inputs run the twins. Inference only: no
autograd formulas (training runs the plain model).
"""
from __future__ import annotations

import torch

from . import dispatch
from .library import define_once, registration
from .reference import arbitrary_glue as reference

PAD_SCHEMA = ("feature_pad(Tensor x, Tensor? bias, Tensor? skip, bool relu, int resample, int pad, bool keep, "
              "bool pool) -> (Tensor, Tensor, Tensor)")
AFFINE_SCHEMA = "norm_affine(Tensor x, float eps) -> (Tensor, Tensor)"
STATS_SCHEMA = ("adaattn_stats(Tensor o, Tensor x, Tensor x_scale, Tensor x_shift, Tensor s_mean, Tensor s_std, "
                "Tensor ln_weight, Tensor ln_bias, float eps, float ln_eps) -> (Tensor, Tensor)")
DETAIL_SCHEMA = "detail_upscale(Tensor content, Tensor diff) -> Tensor"
KERNEL_DTYPES = (torch.float16, torch.bfloat16)

def _fake_pad(x, bias, skip, relu, resample, pad, keep, pool):
    reference.check_feature_pad(x, bias, skip, relu, resample, pad, keep, pool)
    n, c, h, w = x.shape
    ho, wo = reference.resampled_size(h, w, resample)
    cl = torch.channels_last
    out = torch.empty((n, c, ho + 2 * pad, wo + 2 * pad), dtype=x.dtype, device=x.device, memory_format=cl)
    plain = torch.empty((n, c, ho, wo), dtype=x.dtype, device=x.device, memory_format=cl) if keep \
        else x.new_empty(0)
    pooled = torch.empty((n, c, ho // 2, wo // 2), dtype=x.dtype, device=x.device, memory_format=cl) if pool \
        else x.new_empty(0)
    return out, plain, pooled


def _fake_affine(x, eps):
    reference.check_norm_affine(x, eps)
    v = x.new_empty(x.shape[:2], dtype=torch.float32)
    return v, v.clone()


def _fake_stats(o, x, x_scale, x_shift, s_mean, s_std, ln_weight, ln_bias, eps, ln_eps):
    reference.check_adaattn_stats(o, x, x_scale, x_shift, s_mean, s_std, ln_weight, ln_bias, eps, ln_eps)
    b, heads, n, d = o.shape
    y = o.new_empty((b, n, heads * d // 2))
    return y, y.clone()


def _fake_detail(content, diff):
    reference.check_detail_upscale(content, diff)
    return torch.empty_like(content, memory_format=torch.contiguous_format)


@registration
def _register() -> None:
    for schema, impl, fake in ((PAD_SCHEMA, reference.feature_pad, _fake_pad),
                               (AFFINE_SCHEMA, reference.norm_affine, _fake_affine),
                               (STATS_SCHEMA, reference.adaattn_stats, _fake_stats),
                               (DETAIL_SCHEMA, reference.detail_upscale, _fake_detail)):
        name = schema.split("(", 1)[0]
        lib, first = define_once(schema)
        if first:
            lib.impl(name, impl, "CompositeExplicitAutograd")
            torch.library.register_fake(f"styleforge::{name}", fake, lib=lib)


def _kernel(x: torch.Tensor, dtypes=KERNEL_DTYPES) -> bool:
    """Whether the CUDA op (not the twin) should take this call."""
    if dispatch.current_mode() == "reference" or not x.is_cuda or x.dtype not in dtypes:
        return False
    return dispatch.ensure_cuda_kernels()[0]


def _channels_ok(x: torch.Tensor) -> bool:
    return x.shape[1] % 8 == 0 and x.is_contiguous(memory_format=torch.channels_last)


def feature_pad(x: torch.Tensor, bias: torch.Tensor | None = None, skip: torch.Tensor | None = None, *,
                relu: bool = False, resample: int = 0, pad: int = 1, keep: bool = False, pool: bool = False):
    """(padded, plain or empty, pooled or empty): see `reference.feature_pad`. The kernel takes
    channels_last fp16/bf16 x (and skip) with C % 8 == 0 and an fp32 bias."""
    args = (x, bias, skip, bool(relu), int(resample), int(pad), bool(keep), bool(pool))
    if (_kernel(x) and _channels_ok(x) and (bias is None or bias.dtype == torch.float32)
            and (skip is None or skip.is_contiguous(memory_format=torch.channels_last))):
        return torch.ops.styleforge.feature_pad(*args)
    return reference.feature_pad(*args)


def norm_affine(x: torch.Tensor, eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    if _kernel(x) and _channels_ok(x):
        return torch.ops.styleforge.norm_affine(x, float(eps))
    return reference.norm_affine(x, eps)


def adaattn_stats(o, x, x_scale, x_shift, s_mean, s_std, ln_weight, ln_bias, eps: float = 1e-5,
                  ln_eps: float = 1e-5):
    args = (o, x, x_scale, x_shift, s_mean, s_std, ln_weight, ln_bias, float(eps), float(ln_eps))
    c = x.shape[1] if x.dim() == 4 else 0
    if (_kernel(o) and o.is_contiguous() and _channels_ok(x) and c % 256 == 0 and c <= 1024
            and (o.shape[-1] // 2) % 8 == 0
            and all(t.dtype == torch.float32 and t.is_contiguous() for t in args[2:8])):
        return torch.ops.styleforge.adaattn_stats(*args)
    return reference.adaattn_stats(*args)


def detail_upscale_runs_kernel(content: torch.Tensor) -> bool:
    """Whether `detail_upscale` on this frame runs the CUDA kernel (no full-size temporaries)
    rather than the twin (whole-frame interpolation: callers band big frames themselves)."""
    return _kernel(content, (torch.float32, )) and content.dim() == 4 and content.shape[1] == 3


def detail_upscale(content: torch.Tensor, diff: torch.Tensor) -> torch.Tensor:
    if detail_upscale_runs_kernel(content) and content.is_contiguous() and diff.is_contiguous():
        return torch.ops.styleforge.detail_upscale(content, diff)
    return reference.detail_upscale(content, diff)
