"""`torch.ops.styleforge.conv3x3_norm`, `norm_scale_shift` and `conv3x3_residual_chain`: schemas,
reference/fake registrations and the Python entries, with the same reference|cuda switch as
`instance_norm`.

The pattern is instance_norm.py's: the twins in `reference/<op>.py` are the `CompositeExplicitAutograd`
impls (CPU installs have the ops), and `csrc/bindings_conv3x3.cpp` adds the CUDA kernels when the
extension loads. These are inference ops of the fused engine: no autograd formula is registered.
The fused convolution runs on sm_90a (Hopper) only; `conv3x3_norm_supported` says where, and the
engine keeps cuDNN elsewhere. `norm_scale_shift`'s kernel runs on any GPU.
"""
from __future__ import annotations

import torch

from . import dispatch
from .library import define_once, registration
from .reference import conv3x3 as reference

# in_state: the input norm as its producer's sums (read and zeroed); affine=False: the output's sums
# are left in state for the consumer (reference/norm_sums.py).
CONV_SCHEMA = ("conv3x3_norm(Tensor x, Tensor weight, Tensor? scale, Tensor? shift, Tensor? residual, bool relu, "
               "int upsample, bool keep_input, Tensor? norm_weight, Tensor? norm_bias, float eps, bool stats, "
               "int stride=1, Tensor(a!)? state=None, Tensor(b!)? in_state=None, Tensor? in_norm_weight=None, "
               "Tensor? in_norm_bias=None, bool affine=True) -> (Tensor, Tensor, Tensor, Tensor)")
MOMENTS_SCHEMA = "norm_scale_shift(Tensor x, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor)"
# state: conv3x3_chain.cu's zeroed scratch (barrier counters, fp64 sums), used and left zero;
# out_state: the last link's sums left there for the consumer instead of its (scale, shift).
CHAIN_SCHEMA = ("conv3x3_residual_chain(Tensor x, Tensor? scale, Tensor? shift, Tensor[] weights, "
                "Tensor[] norm_weights, Tensor[] norm_biases, float eps, Tensor(a!) state, Tensor(b!)? in_state=None, "
                "Tensor? in_norm_weight=None, Tensor? in_norm_bias=None, Tensor(c!)? out_state=None) "
                "-> (Tensor, Tensor, Tensor, Tensor)")

pack_weight = reference.pack_weight


def _conv_impl(x, weight, scale, shift, residual, relu, upsample, keep_input, norm_weight, norm_bias, eps, stats,
               stride=1, state=None, in_state=None, in_norm_weight=None, in_norm_bias=None, affine=True):
    return reference.conv3x3_norm(x, weight, scale, shift, residual, relu, upsample, keep_input,
                                          norm_weight, norm_bias, eps, stats, stride, state, in_state,
                                          in_norm_weight, in_norm_bias, affine)


def _conv_fake(x, weight, scale, shift, residual, relu, upsample, keep_input, norm_weight, norm_bias, eps, stats,
               stride=1, state=None, in_state=None, in_norm_weight=None, in_norm_bias=None, affine=True):
    reference.check_args(x, weight, scale, shift, residual, relu, upsample, keep_input, norm_weight,
                                 norm_bias, eps, stride)
    reference.check_sums_args(x, weight, scale, state, in_state, in_norm_weight, in_norm_bias, affine, stats)
    n, _, h, w = x.shape
    cout = weight.shape[2]
    size = reference.output_size
    out = torch.empty((n, cout, size(h, upsample, stride), size(w, upsample, stride)), dtype=x.dtype,
                      device=x.device, memory_format=torch.channels_last)
    kept = (torch.empty(x.shape, dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
            if keep_input else x.new_empty(0))
    vector = x.new_empty((n if stats and affine else 0, cout), dtype=torch.float32)
    return out, vector, vector.clone(), kept


def _moments_impl(x, weight, bias, eps):
    return reference.norm_scale_shift(x, weight, bias, eps)


def _moments_fake(x, weight, bias, eps):
    reference.check_scale_shift_args(x, weight, bias, eps)
    vector = x.new_empty((x.shape[0], x.shape[1]), dtype=torch.float32)
    return vector, vector.clone()


def _chain_impl(x, scale, shift, weights, norm_weights, norm_biases, eps, state, in_state=None, in_norm_weight=None,
                in_norm_bias=None, out_state=None):
    return reference.residual_chain(x, scale, shift, weights, norm_weights, norm_biases, eps,
                                            in_state=in_state, in_norm_weight=in_norm_weight,
                                            in_norm_bias=in_norm_bias, out_state=out_state)


def _chain_fake(x, scale, shift, weights, norm_weights, norm_biases, eps, state, in_state=None, in_norm_weight=None,
                in_norm_bias=None, out_state=None):
    reference.check_chain_args(x, scale, shift, weights, norm_weights, norm_biases, eps)
    reference.check_chain_sums_args(x, scale, in_state, in_norm_weight, in_norm_bias, out_state, len(weights))
    act = torch.empty(x.shape, dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
    vector = x.new_empty((0 if out_state is not None else x.shape[0], 128), dtype=torch.float32)
    return torch.empty_like(act), vector, vector.clone(), act


@registration
def _register() -> None:
    for schema, name, impl, fake in ((CONV_SCHEMA, "conv3x3_norm", _conv_impl, _conv_fake),
                                     (MOMENTS_SCHEMA, "norm_scale_shift", _moments_impl, _moments_fake),
                                     (CHAIN_SCHEMA, "conv3x3_residual_chain", _chain_impl, _chain_fake)):
        lib, first = define_once(schema)
        if first:
            lib.impl(name, impl, "CompositeExplicitAutograd")
            torch.library.register_fake(f"styleforge::{name}", fake, lib=lib)


def conv3x3_norm_supported(device: torch.device | str) -> bool:
    """Whether the fused convolution's CUDA kernel runs on this device (Hopper, sm_90a build)."""
    device = torch.device(device)
    if device.type != "cuda" or dispatch.current_mode() == "reference":
        return False
    if torch.cuda.get_device_capability(device) != (9, 0):
        return False
    return dispatch.ensure_cuda_kernels()[0]


def _use_reference(x: torch.Tensor) -> bool:
    if dispatch.current_mode() == "reference" or not x.is_cuda:
        return True
    return not dispatch.ensure_cuda_kernels()[0]


def conv3x3_norm(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor | None = None,
                 shift: torch.Tensor | None = None, *, residual: torch.Tensor | None = None, relu: bool = False,
                 upsample: int = 1, keep_input: bool = False, norm_weight: torch.Tensor | None = None,
                 norm_bias: torch.Tensor | None = None, eps: float = 1e-5, stats: bool = True, stride: int = 1,
                 state: torch.Tensor | None = None, in_state: torch.Tensor | None = None,
                 in_norm_weight: torch.Tensor | None = None, in_norm_bias: torch.Tensor | None = None,
                 affine: bool = True):
    """Fused prologue (norm apply, + residual, ReLU, ×upsample) → 3×3 reflection-padded conv → next
    norm's affine.

    x (N, Cin, H, W) fp16/bf16 with `weight = pack_weight(w)`, (Cin, Cout, upsample, stride) one of
    `reference.CONFIGS`; returns (out, out_scale, out_shift, a or empty). See
    `reference/conv3x3.py` for the exact semantics; stats=False skips the statistics (out_scale and
    out_shift come back empty). On CUDA devices other than Hopper the reference runs (slow, correct).
    state: a `norm_state(N, Cout, device)` for the in-kernel hand-off (the convolution's last block
    writes out_scale/out_shift: no second kernel), reused across calls on one stream; None: the
    separate hand-off kernel. The result is the same either way (to fp32 rounding of the sums).
    The sums hand-off (no kernel and no last-block step between two layers): affine=False leaves the
    output's sums in `state` (out_scale/out_shift come back empty) for the next layer, which takes
    that state as in_state, with the norm's in_norm_weight, in_norm_bias (and eps), instead of scale
    and shift, forms the affine in its own prologue and leaves the state zero.
    """
    args = (x, weight, scale, shift, residual, bool(relu), int(upsample), bool(keep_input), norm_weight, norm_bias,
            float(eps), bool(stats), int(stride))
    sums = (state, in_state, in_norm_weight, in_norm_bias, bool(affine))
    if _use_reference(x) or not conv3x3_norm_supported(x.device):
        return reference.conv3x3_norm(*args, *sums)
    if state is not None:
        check_norm_state("conv3x3_norm", state, x, x.shape[0], weight.shape[2])
    if in_state is not None:
        check_norm_state("conv3x3_norm", in_state, x, x.shape[0], x.shape[1])
    return torch.ops.styleforge.conv3x3_norm(*args, *sums)


def chain_state(n: int, links: int, device: torch.device | str) -> torch.Tensor:
    """A zeroed state for `conv3x3_residual_chain` (batch n, `links` convolutions). Each call leaves
    it zero (with out_state: what it leaves, the next call clears first), so one state serves every
    call of `links` convolutions on one stream (graph replays too); calls that may run at the same
    time need their own."""
    return torch.zeros(reference.chain_state_bytes(n, links), dtype=torch.uint8, device=device)


def check_norm_state(name: str, state: torch.Tensor, x: torch.Tensor, n: int, c: int) -> None:
    """ValueError unless state can be the in-kernel hand-off's state for batch n, c channels on x's
    device (its zeros are the caller's promise: `norm_state` makes them, every call keeps them)."""
    need = reference.norm_state_bytes(n, c)
    if (state.dtype != torch.uint8 or state.device != x.device or not state.is_contiguous()
            or state.numel() < need or state.data_ptr() % 16):
        raise ValueError(f"{name}: state must be a contiguous, 16-byte aligned uint8 tensor of at least {need} "
                         f"bytes on {x.device} (norm_state({n}, {c}, device)), got {state.dtype} "
                         f"{tuple(state.shape)} on {state.device}")


def norm_state(n: int, c: int, device: torch.device | str) -> torch.Tensor:
    """A zeroed state for the in-kernel InstanceNorm hand-off of a convolution with c output channels
    at batch n (`conv3x3_norm(..., state=)`, `conv9x9_norm`): the kernel adds its tiles' moments
    to it and its last block turns them into (scale, shift), so no hand-off kernel runs; or, with
    affine=False, leaves them for the next layer's in_state, which zeroes it. Each pair of calls
    leaves it zero, so one state serves every call on one stream (graph replays too); calls that may
    run at the same time need their own."""
    return torch.zeros(reference.norm_state_bytes(n, c), dtype=torch.uint8, device=device)


def conv3x3_residual_chain(x: torch.Tensor, scale: torch.Tensor | None, shift: torch.Tensor | None, weights,
                           norm_weights, norm_biases, eps: float = 1e-5, state: torch.Tensor | None = None,
                           chain: bool = True, in_state: torch.Tensor | None = None,
                           in_norm_weight: torch.Tensor | None = None, in_norm_bias: torch.Tensor | None = None,
                           out_state: torch.Tensor | None = None):
    """The residual blocks as one op: `reference.residual_chain`'s semantics. On Hopper one
    persistent kernel runs every link where all the tiles fit on the GPU at once (512² and smaller at
    batch 1), else the links run as conv3x3_norm kernels. chain=False
    runs them as separate conv3x3_norm calls instead. state: from `chain_state`, or a fresh one per call.
    The norm before the chain is (scale, shift), or its producer's sums in in_state (with
    in_norm_weight, in_norm_bias: see conv3x3_norm), which the first link turns into its affine. With
    out_state (a zeroed `norm_state` of 128 channels; at least 4 convolutions) the last link's norm is
    left there as sums for the consumer's in_state, and the returned scale and shift are empty (0, 128):
    the persistent kernel then ends without its last CTA forming the affine."""
    weights, norm_weights, norm_biases = list(weights), list(norm_weights), list(norm_biases)
    sums = dict(in_state=in_state, in_norm_weight=in_norm_weight, in_norm_bias=in_norm_bias, out_state=out_state)
    if _use_reference(x) or not conv3x3_norm_supported(x.device):
        return reference.residual_chain(x, scale, shift, weights, norm_weights, norm_biases, eps, **sums)
    if not chain:
        return reference.residual_chain(x, scale, shift, weights, norm_weights, norm_biases, eps,
                                                conv=torch.ops.styleforge.conv3x3_norm, **sums)
    reference.check_chain_args(x, scale, shift, weights, norm_weights, norm_biases, eps)
    reference.check_chain_sums_args(x, scale, in_state, in_norm_weight, in_norm_bias, out_state, len(weights))
    if state is None:
        state = chain_state(x.shape[0], len(weights), x.device)
    return torch.ops.styleforge.conv3x3_residual_chain(x, scale, shift, weights, norm_weights, norm_biases,
                                                       float(eps), state, in_state, in_norm_weight, in_norm_bias,
                                                       out_state)


def norm_scale_shift(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                     eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """InstanceNorm of x (N, C, H, W), C = 32, 64 or 128, as one affine per (sample, channel): (scale, shift),
    fp32 (N, C)."""
    if _use_reference(x):
        return reference.norm_scale_shift(x, weight, bias, eps)
    # Checked here first (ValueError naming the rule): see `conv9x9.conv9x9` for why.
    reference.check_scale_shift_args(x, weight, bias, eps)
    return torch.ops.styleforge.norm_scale_shift(x, weight, bias, float(eps))
