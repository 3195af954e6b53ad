"""`torch.ops.styleforge.attention`: schema, reference/fake/autograd registrations, and the Python
entry with the same reference|cuda switch as `instance_norm`.

The pattern is conv9x9.py's: the twin in `reference/<op>.py` is the
`CompositeExplicitAutograd` impl (so CPU-only installs have the op and gradcheck runs on it in
float64), and `csrc/bindings_attention.cpp` adds the flash-style tensor-core kernel for the CUDA
key when the extension loads. The backward recomputes through the twin (materialises N×N: correct,
not fast — a backward kernel is future work). The entry `attention(...)` adds what the kernel
does not do itself: zero-padding of other head dims up to 32/64/128 and the opt-in fp32 path
(`fp32_via_bf16=True`: q, k, v rounded to bf16, fp32 softmax and accumulation, an fp32 result:
the op's `fp32_out`, which the Hopper kernel writes straight from its accumulators and the
mma.sync path converts from bf16). Its error against fp32 is that of SDPA in bf16 (the tests
bound it): rounding the inputs to bf16 costs most of it, so a split hi+lo bf16 scheme (~fp32
accuracy, 3× the mma work) is future work.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import dispatch
from .library import backward_through_reference, define_once, registration
from .reference import attention as reference

# fp32_out: return fp32 whatever q's dtype (the fp32-input opt-in path: the Hopper kernel writes fp32
# from its accumulators, which saves a conversion pass over the output).
SCHEMA = ("attention(Tensor q, Tensor k, Tensor v, Tensor? key_padding_mask, float scale, bool fp32_out=False)"
          " -> Tensor")
QUALNAME = "styleforge::attention"

def _reference(q, k, v, key_padding_mask, scale, fp32_out):
    out = reference.attention(q, k, v, key_padding_mask, scale)
    return out.float() if fp32_out else out


def _attention_impl(q, k, v, key_padding_mask, scale, fp32_out=False):
    return _reference(q, k, v, key_padding_mask, scale, fp32_out)


def _attention_fake(q, k, v, key_padding_mask, scale, fp32_out=False):
    reference.check_args(q, k, v, key_padding_mask, scale)
    return torch.empty(q.shape, dtype=torch.float32 if fp32_out else q.dtype, device=q.device)


def _setup_context(ctx, inputs, output):
    q, k, v, key_padding_mask, scale, fp32_out = inputs
    ctx.save_for_backward(q, k, v, key_padding_mask)
    ctx.scale = scale
    ctx.fp32_out = fp32_out


def _backward(ctx, grad):
    q, k, v, key_padding_mask = ctx.saved_tensors
    return backward_through_reference(
        lambda q, k, v: _reference(q, k, v, key_padding_mask, ctx.scale, ctx.fp32_out),
        (q, k, v), ctx.needs_input_grad, grad, num_inputs=6)


@registration
def _register() -> None:
    lib, first = define_once(SCHEMA)
    if first:
        lib.impl("attention", _attention_impl, "CompositeExplicitAutograd")
        torch.library.register_fake(QUALNAME, _attention_fake, lib=lib)
        torch.library.register_autograd(QUALNAME, _backward, setup_context=_setup_context, lib=lib)


def kernel_head_dim(d: int) -> int | None:
    """The kernel head dim that serves d (d itself or the next one up, zero-padded), or None."""
    return next((s for s in reference.KERNEL_HEAD_DIMS if s >= d), None)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor | None = None,
              scale: float | None = None, *, fp32_via_bf16: bool = False) -> torch.Tensor:
    """softmax(scale · q kᵀ) v with q (B, H, Nq, D), k/v (B, H, Nk, D) → (B, H, Nq, D) in q's dtype.

    key_padding_mask (B, Nk) bool, True = ignore; a row with every key masked returns zeros.
    scale defaults to D^-1/2 (of the caller's D, before any padding). fp16/bf16 CUDA tensors run
    the kernel (D ≤ 128; D not in {32, 64, 128} is zero-padded); fp32 CUDA tensors run the exact
    twin unless `fp32_via_bf16=True` opts into the kernel on bf16-rounded inputs (fp32 output).
    """
    if scale is None:
        scale = q.shape[-1] ** -0.5
    scale = float(scale)
    if dispatch.current_mode() == "reference" or not q.is_cuda:
        return reference.attention(q, k, v, key_padding_mask, scale)
    reference.check_args(q, k, v, key_padding_mask, scale)
    out_dtype = q.dtype
    fp32_out = q.dtype == torch.float32 and fp32_via_bf16
    if fp32_out:
        q, k, v = q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16)
    if q.dtype not in reference.KERNEL_DTYPES:
        return reference.attention(q, k, v, key_padding_mask, scale)
    d = q.shape[-1]
    dk = kernel_head_dim(d)
    if dk is None:
        raise ValueError(f"attention: head dim {d} is unsupported by the kernel (at most 128; "
                         f"supported {reference.KERNEL_HEAD_DIMS}, smaller ones are zero-padded)")
    if dk != d:   # zero columns change neither q·k nor the output's first d columns
        q, k, v = (F.pad(t, (0, dk - d)) for t in (q, k, v))
    dispatch.ensure_cuda_kernels()
    out = torch.ops.styleforge.attention(q, k, v, key_padding_mask, scale, fp32_out)
    if dk != d:
        out = out[..., :d]
    return out.to(out_dtype)
