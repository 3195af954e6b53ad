"""The pure-PyTorch twin of `styleforge::conv3x3_norm` and `styleforge::norm_scale_shift`.

Test oracle, benchmark baseline and fallback of the fused 3×3 convolution (`csrc/conv3x3/conv3x3.cu`),
NHWC (channels_last), fp16/bf16, for the style network's (Cin, Cout, upsample, stride) = (128, 128, 1, 1)
residual convolutions, (128, 64, 2, 1), (64, 32, 2, 1) decoder convolutions and (32, 64, 1, 2),
(64, 128, 1, 2), the encoder's conv2 and conv3:

`conv3x3_norm(x, weight, scale, shift, residual, relu, upsample, keep_input, norm_weight, norm_bias, eps, stats,
              stride)`
  a   = x·scale + shift (+ residual), then ReLU if `relu`, computed in fp32, rounded to x's dtype;
        scale/shift (N, Cin) fp32 are the previous InstanceNorm folded to one affine (or None);
  out = conv3x3(reflection_pad(upsample_nearest(a, upsample), 1), weight, stride) in fp32, rounded to
        x's dtype (no bias: the norm after it removes any per-channel constant);
  (out_scale, out_shift), (N, Cout) fp32, such that InstanceNorm(out; norm_weight, norm_bias, eps)
        = out·out_scale + out_shift, from the biased fp32 statistics of the rounded `out`;
  returns (out, out_scale, out_shift, a if keep_input else an empty tensor); keep_input needs
  upsample 1 and stride 1; with stats=False no statistics are computed and out_scale, out_shift are (0, Cout).
`norm_scale_shift(x, weight, bias, eps)`: the same (scale, shift), (N, C) fp32, for an x of C = 32,
  64 or 128 channels (the hand-off from a cuDNN convolution into the chain).

`weight` is packed once by `pack_weight` into the kernel's shared-memory image: (taps, ⌈Cin/64⌉,
Cout, 64) (Cin 32 zero-padded to 64) with the 16-byte chunks of each 128-byte row XOR-swizzled by
the output channel's low 3 bits. `unpack_weight` inverts it. Taps are the 9 of the 3×3 kernel,
except for the ×2 decoder configurations, computed in phase-split form: a ×2 nearest upsample then a
reflection-padded 3×3 convolution equals, for each output phase (a, b) = (row, column) parity, a 2×2
convolution of the replicate-padded low-resolution input whose taps are sums of the 3×3 taps
(`phase_weight`), so their packed weights hold 16 summed taps (4 phases × 2 × 2), each rounded to
the dtype once, in the order the kernel streams them (`_ring_order`), and the twin computes exactly
that form. `check_args` and `check_scale_shift_args` are the one statement of the argument rules;
the CUDA binding mirrors them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .norm_sums import (  # noqa: F401
    NORM_STATE_HEADER_BYTES,
    NORM_SUM_COPIES,
    add_sums,
    check_state,
    norm_state_bytes,
    take_affine,
)

SCALE_SHIFT_CHANNELS = (32, 64, 128)             # norm_scale_shift's channel counts
# (Cin, Cout, upsample, stride) with a kernel
CONFIGS = ((128, 128, 1, 1), (128, 64, 2, 1), (64, 32, 2, 1), (32, 64, 1, 2), (64, 128, 1, 2))
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)


PHASE_SPLIT = ((128, 64), (64, 32))              # (Cin, Cout) packed and computed in phase-split form
# 3×3 kernel rows (or columns) that land on low-resolution row i − 1 + a + d for output parity a and
# 2×2 tap d: output row 2i + a reads upsampled rows 2i + a − 1 .. 2i + a + 1, i.e. low rows ⌊·/2⌋.
_PHASE_TAPS = {(0, 0): (0,), (0, 1): (1, 2), (1, 0): (0, 1), (1, 1): (2,)}


def packed_shape(cin: int, cout: int) -> tuple[int, int, int, int]:
    return (16 if (cin, cout) in PHASE_SPLIT else 9), (cin + 63) // 64, cout, 64


def _ring_order(cout: int) -> list[int]:
    """Packed position → phase tap 4·phase + 2·dy + dx. Warpgroup wg owns phases 2·wg and 2·wg + 1
    (Cout 64 and 32 alike) and both consume a ring entry at once, so entry v = 4·j + tap holds
    (phase j, tap) then (phase 2 + j, tap)."""
    return [4 * (2 * wg + (v >> 2)) + (v & 3) for v in range(8) for wg in range(2)]


def phase_weight(weight: torch.Tensor) -> torch.Tensor:
    """(Cout, Cin, 3, 3) → (Cout, Cin, 16) summed taps, tap 4·(2a + b) + 2·dy + dx, in fp32."""
    w = weight.float()
    taps = []
    for a in range(2):
        for b in range(2):
            for dy in range(2):
                for dx in range(2):
                    rows, cols = _PHASE_TAPS[(a, dy)], _PHASE_TAPS[(b, dx)]
                    taps.append(w[:, :, list(rows)][:, :, :, list(cols)].sum(dim=(2, 3)))
    return torch.stack(taps, dim=2)


def _swizzle_index(cout: int, device: torch.device) -> torch.Tensor:
    """(Cout, 8): for output channel n, the 16-byte chunk stored in slot s is chunk s ^ (n % 8)."""
    n = torch.arange(cout, device=device).unsqueeze(1)
    s = torch.arange(8, device=device).unsqueeze(0)
    return s ^ (n % 8)


def pack_weight(weight: torch.Tensor) -> torch.Tensor:
    """(Cout, Cin, 3, 3) → the kernel's (taps, Cin/64, Cout, 64) packed, swizzled layout, same dtype
    (16 phase-split taps for the ×2 configurations, summed in fp32 and rounded once, else 9; Cin 32
    is zero-padded to 64)."""
    if (weight.dim() != 4 or tuple(weight.shape[2:]) != (3, 3) or (weight.shape[1] % 64 and weight.shape[1] != 32)
            or weight.shape[0] % 8):
        raise ValueError(f"conv3x3 pack_weight: weight must be (Cout, Cin, 3, 3) with Cin 32 or a multiple of 64, "
                         f"got {tuple(weight.shape)}")
    taps = packed_shape(*reversed(weight.shape[:2]))[0]
    if weight.shape[1] == 32:
        weight = F.pad(weight, (0, 0, 0, 0, 0, 32))                  # K padded with zero channels
    cout, cin = weight.shape[:2]
    kb = cin // 64
    by_tap = (phase_weight(weight.detach()).to(weight.dtype)[:, :, _ring_order(cout)] if taps == 16
              else weight.detach().reshape(cout, cin, 9))                  # (Cout, Cin, packed tap)
    # (tap, n, k) → (tap, kb, n, chunk, 8) with k = 64·kb + 8·chunk + e.
    w = by_tap.permute(2, 0, 1).reshape(taps, cout, kb, 8, 8).permute(0, 2, 1, 3, 4)
    index = _swizzle_index(cout, weight.device).view(1, 1, cout, 8, 1).expand(taps, kb, cout, 8, 8)
    return torch.gather(w, 3, index).reshape(taps, kb, cout, 64).contiguous()


def unpack_weight(packed: torch.Tensor) -> torch.Tensor:
    """The inverse of `pack_weight` (the swizzle is an XOR, its own inverse): (Cout, Cin, 3, 3), or
    (Cout, Cin, 16) summed taps (tap 4·phase + 2·dy + dx) for a phase-split weight."""
    taps, kb, cout, _ = packed.shape
    w = packed.reshape(taps, kb, cout, 8, 8)
    index = _swizzle_index(cout, packed.device).view(1, 1, cout, 8, 1).expand(taps, kb, cout, 8, 8)
    w = torch.gather(w, 3, index)                                 # (tap, kb, n, chunk, e)
    w = w.permute(2, 1, 3, 4, 0).reshape(cout, kb * 64, taps)     # (n, k, tap)
    if taps == 16:
        order = torch.tensor(_ring_order(cout), device=packed.device)
        return w[:, :, torch.argsort(order)].contiguous()
    return w.reshape(cout, kb * 64, 3, 3).contiguous()


def _conv(up: torch.Tensor, a: torch.Tensor, weight: torch.Tensor, stride: int) -> torch.Tensor:
    """The convolution in fp32: of the reflection-padded upsampled `up`, or, phase split, four 2×2
    convolutions of the replicate-padded low-resolution `a` interleaved into the ×2 output."""
    w = unpack_weight(weight).float()[:, :a.shape[1]]                # Cin 32: drop the zero padding
    if w.dim() == 4:
        return F.conv2d(F.pad(up, (1, 1, 1, 1), mode="reflect"), w, stride=stride)
    n, _, h, wd = a.shape
    low = F.pad(a.float(), (1, 1, 1, 1), mode="replicate")
    out = low.new_empty((n, w.shape[0], 2 * h, 2 * wd))
    for pa in range(2):
        for pb in range(2):
            taps = w[:, :, 4 * (2 * pa + pb):4 * (2 * pa + pb) + 4].reshape(w.shape[0], w.shape[1], 2, 2)
            out[:, :, pa::2, pb::2] = F.conv2d(low[:, :, pa:pa + h + 1, pb:pb + wd + 1], taps)
    return out


def _check_x(name: str, x: torch.Tensor, channels: int, upsample: int = 1) -> None:
    if x.dim() != 4:
        raise ValueError(f"{name}: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"{name}: x dtype {x.dtype} is unsupported (float16, bfloat16)")
    if x.shape[1] != channels:
        raise ValueError(f"{name}: x must have {channels} channels, got {x.shape[1]} (other layers use cuDNN)")
    if x.shape[2] * upsample < 2 or x.shape[3] * upsample < 2:
        raise ValueError(f"{name}: H and W must be >= 2 for the reflection pad, got {x.shape[2]}x{x.shape[3]}")


def _check_vector(name: str, arg: str, v: torch.Tensor | None, x: torch.Tensor, channels: int) -> None:
    if v is None:
        return
    if v.dim() != 1 or v.shape[0] != channels or not v.is_floating_point():
        raise ValueError(f"{name}: {arg} must be a floating ({channels},) tensor, got {v.dtype} {tuple(v.shape)}")
    if v.device != x.device:
        raise ValueError(f"{name}: {arg} is on {v.device}, x on {x.device}")


def check_scale_shift_args(x, weight, bias, eps) -> None:
    name = "norm_scale_shift"
    if x.dim() != 4:
        raise ValueError(f"{name}: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    channels = x.shape[1]
    if channels not in SCALE_SHIFT_CHANNELS:
        raise ValueError(f"{name}: x must have 32, 64 or 128 channels, got {channels} (other layers use cuDNN)")
    _check_x(name, x, channels)
    _check_vector(name, "weight", weight, x, channels)
    _check_vector(name, "bias", bias, x, channels)
    if not eps > 0:
        raise ValueError(f"{name}: eps must be > 0, got {eps}")


def output_size(size: int, upsample: int, stride: int) -> int:
    """One axis of the output: upsample × size, or ⌈size / 2⌉ for stride 2 (3×3, pad 1)."""
    return (size + 1) // 2 if stride == 2 else size * upsample


def check_args(x, weight, scale, shift, residual, relu, upsample, keep_input, norm_weight, norm_bias, eps,
               stride=1) -> None:
    name = "conv3x3_norm"
    if x.dim() != 4:
        raise ValueError(f"{name}: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if weight.dim() != 4 or weight.shape[3] != 64:
        raise ValueError(f"{name}: weight must be the packed (taps, ⌈Cin/64⌉, Cout, 64) tensor from pack_weight, "
                         f"got {tuple(weight.shape)}")
    cin, cout = x.shape[1], weight.shape[2]
    if weight.shape[1] != (cin + 63) // 64:
        raise ValueError(f"{name}: x has {cin} channels but the packed weight is for {64 * weight.shape[1]} "
                         "channels (Cin 32 packs as 64)")
    if weight.shape[0] != packed_shape(cin, cout)[0]:
        raise ValueError(f"{name}: a packed weight of (Cin, Cout) = ({cin}, {cout}) has {packed_shape(cin, cout)[0]} "
                         f"taps (pack_weight), got {weight.shape[0]}")
    if (cin, cout, upsample, stride) not in CONFIGS:
        raise ValueError(f"{name}: (Cin, Cout, upsample, stride) = ({cin}, {cout}, {upsample}, {stride}) is "
                         f"unsupported; supported: {CONFIGS} (other layers use cuDNN)")
    _check_x(name, x, cin, upsample)
    if weight.dtype != x.dtype or weight.device != x.device:
        raise ValueError(f"{name}: weight ({weight.dtype} on {weight.device}) must match x ({x.dtype} on {x.device})")
    if (scale is None) != (shift is None):
        raise ValueError(f"{name}: scale and shift come together (both or neither)")
    for arg, t in (("scale", scale), ("shift", shift)):
        if t is not None and (tuple(t.shape) != (x.shape[0], cin) or t.dtype != torch.float32
                              or t.device != x.device):
            raise ValueError(f"{name}: {arg} must be a float32 ({x.shape[0]}, {cin}) tensor on {x.device}, "
                             f"got {t.dtype} {tuple(t.shape)} on {t.device}")
    if residual is not None and (residual.shape != x.shape or residual.dtype != x.dtype
                                 or residual.device != x.device):
        raise ValueError(f"{name}: residual must match x ({x.dtype} {tuple(x.shape)} on {x.device}), got "
                         f"{residual.dtype} {tuple(residual.shape)} on {residual.device}")
    if keep_input and (upsample != 1 or stride != 1):
        raise ValueError(f"{name}: keep_input needs upsample 1 and stride 1, got {upsample} and {stride}")
    _check_vector(name, "norm_weight", norm_weight, x, cout)
    _check_vector(name, "norm_bias", norm_bias, x, cout)
    if not eps > 0:
        raise ValueError(f"{name}: eps must be > 0, got {eps}")


def norm_scale_shift(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                     eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    check_scale_shift_args(x, weight, bias, eps)
    return _scale_shift(x, weight, bias, eps)


def _scale_shift(x, weight, bias, eps):
    var, mean = torch.var_mean(x.float(), dim=(2, 3), unbiased=False)
    scale = torch.rsqrt(var + eps)
    if weight is not None:
        scale = scale * weight.float()
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias.float()
    return scale, shift


def check_sums_args(x, weight, scale, state, in_state, in_norm_weight, in_norm_bias, affine, stats) -> None:
    """The sums hand-off's rules for conv3x3_norm (after check_args): an in_state instead of
    scale/shift, with (Cin,) norm vectors; affine=False needs stats and a state."""
    name = "conv3x3_norm"
    n, cin, cout = x.shape[0], x.shape[1], weight.shape[2]
    if in_state is not None:
        if scale is not None:
            raise ValueError(f"{name}: the input norm is scale/shift or in_state, not both")
        check_state(name, "in_state", in_state, x, n, cin)
    _check_vector(name, "in_norm_weight", in_norm_weight, x, cin)
    _check_vector(name, "in_norm_bias", in_norm_bias, x, cin)
    if not affine:
        if not stats or state is None:
            raise ValueError(f"{name}: affine=False leaves the sums in state: needs stats=True and a state")
        check_state(name, "state", state, x, n, cout)


def conv3x3_norm(x, weight, scale=None, shift=None, residual=None, relu=False, upsample=1, keep_input=False,
                 norm_weight=None, norm_bias=None, eps=1e-5, stats=True, stride=1, state=None, in_state=None,
                 in_norm_weight=None, in_norm_bias=None, affine=True):
    """See the module docstring. The sums hand-off (reference/norm_sums.py): in_state (with in_norm_weight,
    in_norm_bias and eps), instead of scale/shift, is the input norm as its producer's sums, taken
    and zeroed; affine=False adds the output's sums to `state` for the consumer and returns empty
    (0, Cout) out_scale/out_shift. With affine=True a state is the CUDA in-kernel hand-off's scratch,
    which the twin does not need (it stays zero)."""
    check_args(x, weight, scale, shift, residual, relu, upsample, keep_input, norm_weight, norm_bias, eps, stride)
    check_sums_args(x, weight, scale, state, in_state, in_norm_weight, in_norm_bias, affine, stats)
    if in_state is not None:
        scale, shift = take_affine(in_state, x.shape[0], x.shape[1], x.shape[2] * x.shape[3], in_norm_weight,
                                   in_norm_bias, eps)
    a = x.float()
    if scale is not None:
        a = a * scale[:, :, None, None] + shift[:, :, None, None]
    if residual is not None:
        a = a + residual.float()
    if relu:
        a = a.clamp_min(0)
    a = a.to(x.dtype)
    up = a.float()
    if upsample > 1:
        up = up.repeat_interleave(upsample, dim=2).repeat_interleave(upsample, dim=3)
    out = _conv(up, a, weight, stride).to(x.dtype)
    if stats and not affine:
        add_sums(state, out)
        out_scale = out_shift = x.new_empty((0, out.shape[1]), dtype=torch.float32)
    elif stats:
        out_scale, out_shift = _scale_shift(out, norm_weight, norm_bias, eps)
    else:
        out_scale = out_shift = x.new_empty((0, out.shape[1]), dtype=torch.float32)
    kept = a.contiguous(memory_format=torch.channels_last) if keep_input else x.new_empty(0)
    return out.contiguous(memory_format=torch.channels_last), out_scale, out_shift, kept


CHAIN_STATE_HEADER_BYTES = 256                    # conv3x3_chain.cu's counters before the fp64 sums
CHAIN_SUM_COPIES = 8                              # copies of the sums (conv3x3_tile.cuh, kChainSumCopies)


def chain_state_bytes(n: int, links: int) -> int:
    """Bytes of `residual_chain`'s state for batch n: the CUDA chain's barrier counters and fp64
    per-(link, copy, sample, channel) sums Σx, Σx² (conv3x3.h, conv3x3_chain_state_bytes)."""
    return CHAIN_STATE_HEADER_BYTES + links * CHAIN_SUM_COPIES * 2 * n * 128 * 8


def check_chain_args(x, scale, shift, weights, norm_weights, norm_biases, eps) -> None:
    name = "conv3x3_residual_chain"
    links = len(weights)
    if links < 2 or links % 2 or links > 16:
        raise ValueError(f"{name}: weights must hold an even number of packed convolutions, 2 to 16, got {links}")
    if len(norm_weights) != links or len(norm_biases) != links:
        raise ValueError(f"{name}: norm_weights and norm_biases need one (128,) tensor per convolution ({links}), "
                         f"got {len(norm_weights)} and {len(norm_biases)}")
    # Every link is conv3x3_norm's (128, 128, 1, 1) configuration: its rules name the argument.
    for w, nw, nb in zip(weights, norm_weights, norm_biases):
        check_args(x, w, scale, shift, None, True, 1, True, nw, nb, eps, 1)


def check_chain_sums_args(x, scale, in_state, in_norm_weight, in_norm_bias, out_state=None, links=0) -> None:
    """The norm before the chain: (scale, shift), or in_state with (128,) norm vectors; the norm after
    it as an out_state (needs ≥ 4 convolutions: conv3x3_chain.cu resets its last barrier's counter
    at the next launch, which must not be the first barrier)."""
    name = "conv3x3_residual_chain"
    if (scale is None) == (in_state is None):
        raise ValueError(f"{name}: the norm before the chain is scale and shift, or in_state (exactly one)")
    if in_state is not None:
        check_state(name, "in_state", in_state, x, x.shape[0], 128)
    if out_state is not None:
        check_state(name, "out_state", out_state, x, x.shape[0], 128)
        if links < 4:
            raise ValueError(f"{name}: out_state needs at least 4 convolutions (two blocks), got {links}")
    _check_vector(name, "in_norm_weight", in_norm_weight, x, 128)
    _check_vector(name, "in_norm_bias", in_norm_bias, x, 128)


def residual_chain(x, scale, shift, weights, norm_weights, norm_biases, eps=1e-5, conv=None, in_state=None,
                   in_norm_weight=None, in_norm_bias=None, out_state=None):
    """The style network's residual blocks on conv3x3_norm: block b is links 2b and 2b + 1. x is conv3's
    raw output, (scale, shift) its norm (applied with ReLU), or that norm from its producer's sums in
    in_state (reference/norm_sums.py: taken and zeroed); returns the last link's raw output, its norm as
    (scale, shift) and the last block's input (for the skip that deconv1 adds); with out_state that
    norm is left there as sums instead (conv3x3_norm's affine=False) and scale, shift are empty. `conv`
    takes conv3x3_norm's positional arguments (default: this twin; the CUDA op for separate launches)."""
    check_chain_args(x, scale, shift, weights, norm_weights, norm_biases, eps)
    check_chain_sums_args(x, scale, in_state, in_norm_weight, in_norm_bias, out_state, len(weights))
    if in_state is not None:
        scale, shift = take_affine(in_state, x.shape[0], 128, x.shape[2] * x.shape[3], in_norm_weight, in_norm_bias,
                                   eps)
    conv = conv or conv3x3_norm
    h, block_in, relu = x, None, True        # the first block's input is relu(norm(x))
    for b in range(0, len(weights), 2):
        h, s1, t1, block_in = conv(h, weights[b], scale, shift, block_in, relu, 1, True, norm_weights[b],
                                   norm_biases[b], eps, True)
        to_state = out_state is not None and b + 2 == len(weights)
        h, scale, shift, _ = conv(h, weights[b + 1], s1, t1, None, True, 1, False, norm_weights[b + 1],
                                  norm_biases[b + 1], eps, True, 1, out_state if to_state else None, None, None,
                                  None, not to_state)
        relu = False                          # later block inputs: block_in + norm(h), no ReLU
    return h, scale, shift, block_in
