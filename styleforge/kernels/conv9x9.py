"""`torch.ops.styleforge.conv9x9`, `conv9x9_norm` and `conv9x9_from_sums`: schemas, reference/fake(/autograd)
registrations, and the Python entries with the same reference|cuda switch as `instance_norm`.

The pattern is instance_norm.py's (its docstring says why the schema is defined in Python): the twins in
`reference/<op>.py` are the `CompositeExplicitAutograd` impls, so CPU-only installs have the ops,
and `csrc/bindings_conv.cpp` adds the tensor-core kernels for the CUDA key when the extension
loads. conv9x9 is an inference kernel whose backward differentiates the twin (correct, not fast);
conv9x9_norm (conv1 plus IN1's statistics through the in-kernel hand-off) is inference only.
"""
from __future__ import annotations

import torch

from . import dispatch
from .conv3x3 import norm_state
from .library import backward_through_reference, define_once, register_ops, registration
from .reference import conv9x9 as reference

pack_conv1_weight = reference.pack_conv1_weight
pack_head_weight = reference.pack_head_weight

SCHEMA = ("conv9x9(Tensor x, Tensor weight, Tensor? bias, bool out_float32=False, Tensor? scale=None, "
          "Tensor? shift=None, int pad=0) -> Tensor")
QUALNAME = "styleforge::conv9x9"
# state: norm_state(N, 32)'s zeroed scratch (a CTA counter and fp64 sums), used and left zero; with
# affine=False the sums are left in it for the next layer (reference/norm_sums.py).
# packed_weight: pack_conv1_weight(weight), copied by the Hopper kernel instead of rearranging weight.
NORM_SCHEMA = ("conv9x9_norm(Tensor x, Tensor weight, int pad, Tensor? norm_weight, Tensor? norm_bias, float eps, "
               "Tensor(a!) state, bool affine=True, Tensor? packed_weight=None) -> (Tensor, Tensor, Tensor)")
NORM_QUALNAME = "styleforge::conv9x9_norm"
# The head applying the norm whose sums its producer left in state (read, then zeroed).
# packed_weight: pack_head_weight(weight), copied by the kernel instead of gathering its B fragments.
FROM_SUMS_SCHEMA = ("conv9x9_from_sums(Tensor x, Tensor weight, Tensor? bias, bool out_float32, int pad, "
                    "Tensor(a!) state, Tensor? norm_weight, Tensor? norm_bias, float eps, "
                    "Tensor? packed_weight=None) -> Tensor")
FROM_SUMS_QUALNAME = "styleforge::conv9x9_from_sums"

def _conv9x9_impl(x, weight, bias, out_float32=False, scale=None, shift=None, pad=0):
    return reference.conv9x9(x, weight, bias, out_float32, scale, shift, pad)


def _conv9x9_fake(x, weight, bias, out_float32=False, scale=None, shift=None, pad=0):
    reference.check_args(x, weight, bias, out_float32, scale, shift, pad)
    dtype = torch.float32 if out_float32 else weight.dtype
    return torch.empty(reference.output_shape(x, weight, pad), dtype=dtype, device=x.device,
                       memory_format=torch.channels_last)


def _setup_context(ctx, inputs, output):
    x, weight, bias, out_float32, scale, shift, pad = inputs
    # Saved in input positions (out_float32, at 3, is not a tensor): backward_through_reference
    # matches saved tensor i with needs_input_grad[i].
    ctx.save_for_backward(x, weight, bias, None, scale, shift)
    ctx.out_float32, ctx.pad = out_float32, pad


def _backward(ctx, grad):
    return backward_through_reference(
        lambda x, weight, bias, _, scale, shift: reference.conv9x9(x, weight, bias, ctx.out_float32, scale,
                                                                        shift, ctx.pad),
        ctx.saved_tensors, ctx.needs_input_grad, grad, num_inputs=7)


def _norm_impl(x, weight, pad, norm_weight, norm_bias, eps, state, affine=True, packed_weight=None):
    return reference.conv9x9_norm(x, weight, pad, norm_weight, norm_bias, eps, state, affine, packed_weight)


def _norm_fake(x, weight, pad, norm_weight, norm_bias, eps, state, affine=True, packed_weight=None):
    reference.check_norm_args(x, weight, pad, norm_weight, norm_bias, eps, state, packed_weight)
    y = torch.empty(reference.output_shape(x, weight, pad), dtype=weight.dtype, device=x.device,
                    memory_format=torch.channels_last)
    vector = x.new_empty((x.shape[0] if affine else 0, weight.shape[0]), dtype=torch.float32)
    return y, vector, vector.clone()


def _from_sums_impl(x, weight, bias, out_float32, pad, state, norm_weight, norm_bias, eps, packed_weight=None):
    return reference.conv9x9_from_sums(x, weight, bias, out_float32, pad, state, norm_weight, norm_bias, eps,
                                            packed_weight)


def _from_sums_fake(x, weight, bias, out_float32, pad, state, norm_weight, norm_bias, eps, packed_weight=None):
    reference.check_from_sums_args(x, weight, bias, out_float32, pad, state, norm_weight, norm_bias, eps,
                                        packed_weight)
    return torch.empty(reference.output_shape(x, weight, pad), dtype=torch.float32 if out_float32 else weight.dtype,
                       device=x.device, memory_format=torch.channels_last)


@registration
def _register() -> None:
    lib, first = define_once(SCHEMA)
    if first:
        lib.impl("conv9x9", _conv9x9_impl, "CompositeExplicitAutograd")
        torch.library.register_fake(QUALNAME, _conv9x9_fake, lib=lib)
        torch.library.register_autograd(QUALNAME, _backward, setup_context=_setup_context, lib=lib)
    lib, first = define_once(NORM_SCHEMA)
    if first:
        lib.impl("conv9x9_norm", _norm_impl, "CompositeExplicitAutograd")
        torch.library.register_fake(NORM_QUALNAME, _norm_fake, lib=lib)
    lib, first = define_once(FROM_SUMS_SCHEMA)
    if first:
        lib.impl("conv9x9_from_sums", _from_sums_impl, "CompositeExplicitAutograd")
        torch.library.register_fake(FROM_SUMS_QUALNAME, _from_sums_fake, lib=lib)


def conv9x9_supported(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                      out_float32: bool = False, scale: torch.Tensor | None = None,
                      shift: torch.Tensor | None = None, pad: int = 0) -> bool:
    """Whether `conv9x9` accepts these arguments (the engine keeps cuDNN where it does not)."""
    try:
        reference.check_args(x, weight, bias, out_float32, scale, shift, pad)
    except ValueError:
        return False
    return True


def conv9x9(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
            out_float32: bool = False, scale: torch.Tensor | None = None, shift: torch.Tensor | None = None,
            pad: int = 0) -> torch.Tensor:
    """9×9 convolution, stride 1, of x padded by `pad` (0: x is pre-padded; 4: reflection, in the
    kernel's addressing): (N, Cin, H, W) → (N, Cout, H + 2·pad − 8, W + 2·pad − 8).

    Channels_last output in the weight's dtype (fp16/bf16; fp32 with out_float32, deconv3 only).
    (Cin, Cout) must be (3, 32) — x may then be float32, cast on load — or (32, 3), which can apply
    the InstanceNorm before it on load: relu(x·scale + shift). See `reference.conv9x9`.
    """
    if dispatch.current_mode() == "reference":
        return reference.conv9x9(x, weight, bias, out_float32, scale, shift, pad)
    # The arguments are checked here, before the op, so a bad call is a ValueError naming the rule
    # wherever it runs: on the device machine (torch 2.11.0+cu130, g++ 13.3) a TORCH_CHECK whose
    # message formats an integer segfaults in any cpp_extension (dev/diag/torch_check_probe.py).
    reference.check_args(x, weight, bias, out_float32, scale, shift, pad)
    if x.is_cuda:
        dispatch.ensure_cuda_kernels()
    register_ops()
    return torch.ops.styleforge.conv9x9(x, weight, bias, bool(out_float32), scale, shift, int(pad))


def conv9x9_norm(x: torch.Tensor, weight: torch.Tensor, *, pad: int = 0, norm_weight: torch.Tensor | None = None,
                 norm_bias: torch.Tensor | None = None, eps: float = 1e-5, state: torch.Tensor | None = None,
                 affine: bool = True, packed_weight: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """conv1 (3 → 32, no bias) and its InstanceNorm's statistics in one kernel: (y, scale, shift) with
    y exactly `conv9x9(x, weight, pad=pad)` and (scale, shift), fp32 (N, 32), such that
    InstanceNorm(y; norm_weight, norm_bias, eps) = y·scale + shift (`reference.conv9x9_norm`).

    state: a zeroed `norm_state(N, 32, device)`, left zero (one per stream serves every call, CUDA
    graph replays too); None allocates one per call. affine=False (a state needed): y's sums are
    left in the state for the next layer's in_state, and scale, shift come back (0, 32).
    packed_weight: `pack_conv1_weight(weight)`, made once per weight, saves the Hopper kernel
    rearranging the weight in every CTA (the caller keeps the two in step). Reference mode and CPU
    tensors run the twin.
    """
    if dispatch.current_mode() == "reference" or not x.is_cuda:
        return reference.conv9x9_norm(x, weight, pad, norm_weight, norm_bias, eps, state, affine, packed_weight)
    # Checked here first (ValueError naming the rule): see `conv9x9` for why.
    reference.check_norm_args(x, weight, pad, norm_weight, norm_bias, eps, state, packed_weight)
    if not affine and state is None:
        raise ValueError("conv9x9_norm: affine=False leaves the sums in state: a state is needed")
    dispatch.ensure_cuda_kernels()
    if state is None:
        state = norm_state(x.shape[0], weight.shape[0], x.device)
    return torch.ops.styleforge.conv9x9_norm(x, weight, int(pad), norm_weight, norm_bias, float(eps), state,
                                             bool(affine), packed_weight)


def conv9x9_from_sums(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, state: torch.Tensor, *,
                      out_float32: bool = False, pad: int = 0, norm_weight: torch.Tensor | None = None,
                      norm_bias: torch.Tensor | None = None, eps: float = 1e-5,
                      packed_weight: torch.Tensor | None = None) -> torch.Tensor:
    """The head (32 → 3) applying the InstanceNorm of x (+ ReLU) on load, that norm given as the sums
    its producer left in `state` (conv3x3_norm(..., affine=False)): `conv9x9(x, weight, bias,
    scale=, shift=)` with the affine formed from them; the state is left zero
    (`reference.conv9x9_from_sums`). packed_weight: `pack_head_weight(weight)`, made once per
    weight, saves every CTA gathering its fragments (the caller keeps the two in step). Reference
    mode and CPU tensors run the twin."""
    args = (x, weight, bias, bool(out_float32), int(pad), state, norm_weight, norm_bias, float(eps), packed_weight)
    if dispatch.current_mode() == "reference" or not x.is_cuda:
        return reference.conv9x9_from_sums(*args)
    reference.check_from_sums_args(*args)   # checked here first: see `conv9x9` for why
    dispatch.ensure_cuda_kernels()
    return torch.ops.styleforge.conv9x9_from_sums(*args)
