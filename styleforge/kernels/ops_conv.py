"""`torch.ops.styleforge.conv9x9`: schema, reference/fake/autograd registrations, and the Python
entry with the same reference|cuda switch as `ops.instance_norm`.

The pattern is ops.py's (its docstring says why the schema is defined in Python): the twin in
`reference_conv.py` is the `CompositeExplicitAutograd` impl, so CPU-only installs have the op,
and `csrc/bindings_conv.cpp` adds the tensor-core kernel for the CUDA key when the extension
loads. The op is an inference kernel; its backward differentiates the twin (correct, not fast).
"""
from __future__ import annotations

import torch

from . import ops, reference_conv
from .library import backward_through_reference, define_once

SCHEMA = "conv9x9(Tensor x, Tensor weight, Tensor? bias, bool out_float32=False) -> Tensor"
QUALNAME = "styleforge::conv9x9"

_LIB, _FIRST_IMPORT = define_once(SCHEMA)  # registrations below run only when this defined it


def _conv9x9_impl(x, weight, bias, out_float32=False):
    return reference_conv.conv9x9(x, weight, bias, out_float32)


def _conv9x9_fake(x, weight, bias, out_float32=False):
    reference_conv.check_args(x, weight, bias, out_float32)
    dtype = torch.float32 if out_float32 else x.dtype
    return torch.empty(reference_conv.output_shape(x, weight), dtype=dtype, device=x.device,
                       memory_format=torch.channels_last)


def _setup_context(ctx, inputs, output):
    x, weight, bias, out_float32 = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.out_float32 = out_float32


def _backward(ctx, grad):
    return backward_through_reference(
        lambda x, weight, bias: reference_conv.conv9x9(x, weight, bias, ctx.out_float32),
        ctx.saved_tensors, ctx.needs_input_grad, grad, num_inputs=4)


if _FIRST_IMPORT:
    _LIB.impl("conv9x9", _conv9x9_impl, "CompositeExplicitAutograd")
    torch.library.register_fake(QUALNAME, _conv9x9_fake, lib=_LIB)
    torch.library.register_autograd(QUALNAME, _backward, setup_context=_setup_context, lib=_LIB)


def conv9x9_supported(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                      out_float32: bool = False) -> bool:
    """Whether `conv9x9` accepts these arguments (the engine keeps cuDNN where it does not)."""
    try:
        reference_conv.check_args(x, weight, bias, out_float32)
    except ValueError:
        return False
    return True


def conv9x9(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
            out_float32: bool = False) -> torch.Tensor:
    """VALID 9×9 convolution of a pre-padded fp16/bf16 x: (N, Cin, Hp, Wp) → (N, Cout, Hp−8, Wp−8).

    Channels_last output in x's dtype (fp32 with out_float32, deconv3 only). (Cin, Cout) must be
    (3, 32) or (32, 3). See `reference_conv.conv9x9` for the exact semantics.
    """
    if ops.current_mode() == "reference":
        return reference_conv.conv9x9(x, weight, bias, out_float32)
    if x.is_cuda:
        ops.ensure_cuda_kernels()
    return torch.ops.styleforge.conv9x9(x, weight, bias, bool(out_float32))
