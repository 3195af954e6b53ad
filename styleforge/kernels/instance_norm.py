"""`torch.ops.styleforge.instance_norm`: schema, reference/fake/autograd registrations, and the
Python entry (the reference|cuda switch is `dispatch.py`'s).

Why the schema lives here and not in a C++ `TORCH_LIBRARY` block (STYLE.md's anchor,
pytorch/extension-cpp, puts it there): the C++ library exists only after a successful nvcc
build, but CPU-only installs (CI, laptops) still need the op for the reference path,
`torch.library.opcheck`, `torch.compile` and export. Defining the schema once in Python gives
every install the same op; the op's C++ binding only adds the CUDA kernel with
`TORCH_LIBRARY_IMPL(styleforge, CUDA, m)`, which the dispatcher accepts for a Python-defined
schema. The pure-PyTorch twin is registered as `CompositeExplicitAutograd`: it serves CPU and,
until (or unless) the CUDA kernels load, CUDA too; a kernel registered for the CUDA key takes
precedence over it, so loading the extension needs no re-registration.
"""
from __future__ import annotations

import torch

from . import dispatch
from .library import backward_through_reference, define_once, register_ops, registration
from .reference import instance_norm as reference

SCHEMA = ("instance_norm(Tensor x, Tensor? weight, Tensor? bias, Tensor? residual, float eps, "
          "bool relu, int pad, int upsample) -> Tensor")
QUALNAME = "styleforge::instance_norm"

def _instance_norm_impl(x, weight, bias, residual, eps, relu, pad, upsample):
    return reference.instance_norm(x, weight, bias, residual, eps, relu, pad, upsample)


def _instance_norm_fake(x, weight, bias, residual, eps, relu, pad, upsample):
    reference.check_args(x, weight, bias, residual, eps, pad, upsample)
    memory_format = torch.channels_last if reference.output_channels_last(x) else torch.contiguous_format
    return torch.empty(reference.output_shape(x, pad, upsample), dtype=x.dtype, device=x.device,
                       memory_format=memory_format)


def _setup_context(ctx, inputs, output):
    x, weight, bias, residual, eps, relu, pad, upsample = inputs
    ctx.save_for_backward(x, weight, bias, residual)
    ctx.options = (eps, relu, pad, upsample)


def _backward(ctx, grad):
    """Gradients by differentiating the reference twin (recomputes the forward; correct, not fast)."""
    eps, relu, pad, upsample = ctx.options
    return backward_through_reference(
        lambda x, weight, bias, residual: reference.instance_norm(x, weight, bias, residual, eps, relu, pad, upsample),
        ctx.saved_tensors, ctx.needs_input_grad, grad, num_inputs=8)


@registration
def _register() -> None:
    lib, first = define_once(SCHEMA)
    if first:   # a reload finds the op defined: registering again would be refused
        lib.impl("instance_norm", _instance_norm_impl, "CompositeExplicitAutograd")
        torch.library.register_fake(QUALNAME, _instance_norm_fake, lib=lib)
        torch.library.register_autograd(QUALNAME, _backward, setup_context=_setup_context, lib=lib)


def instance_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                  *, residual: torch.Tensor | None = None, eps: float = 1e-5, relu: bool = False,
                  pad: int = 0, upsample: int = 1) -> torch.Tensor:
    """Fused InstanceNorm: normalise, affine, + residual, ReLU, ×upsample, reflection pad.

    x: (N, C, H, W) fp32/fp16/bf16, NCHW or channels_last → (N, C, H·u + 2·pad, W·u + 2·pad)
    in x's dtype and memory format. See `reference.instance_norm` for the exact semantics.
    """
    if dispatch.current_mode() == "reference":
        return reference.instance_norm(x, weight, bias, residual, eps, relu, pad, upsample)
    if x.is_cuda:
        dispatch.ensure_cuda_kernels()
    register_ops()
    return torch.ops.styleforge.instance_norm(x, weight, bias, residual, float(eps), bool(relu),
                                              int(pad), int(upsample))
