"""The pure-PyTorch twin of `styleforge::conv9x9`: test oracle, benchmark baseline, fallback.

`conv9x9(x, weight, bias, out_float32, scale, shift, pad)` is a VALID 9×9 convolution, stride 1,
of x' = reflection_pad(pad)(round(relu(x·scale + shift))): x (N, Cin, H, W) →
(N, Cout, H + 2·pad − 8, W + 2·pad − 8), computed in fp32 and returned channels_last in the
weight's dtype (fp16/bf16; or fp32 with `out_float32`). pad is 0 (x already padded) or 4 (the
layer's own reflection pad). The norm (scale, shift: float32 (N, Cin), ReLU after) is the
InstanceNorm before the head, so its output is rounded to the dtype as the norm op rounds it;
without it x' = x rounded to the dtype, and x may be float32 for conv1 (the image). Only the
network's two 9×9 layers are supported — (Cin, Cout) = (3, 32), conv1, and (32, 3), deconv3 (the
only one with fp32 output or a norm) — so the twin and the CUDA kernel (`csrc/conv9x9/conv9x9.cu`)
refuse exactly the same calls.
`check_args` and `output_shape` are the one statement of those rules: the fake impl in
`conv9x9.py` uses them and `csrc/bindings_conv.cpp` mirrors them. Not fast; not a general conv.

`conv9x9_norm(x, weight, pad, norm_weight, norm_bias, eps)` is conv1 with its InstanceNorm's
statistics: (y, scale, shift) with y = `conv9x9(x, weight, None, False, None, None, pad)` and
(scale, shift) = `conv3x3.norm_scale_shift(y, norm_weight, norm_bias, eps)`, exactly that
composition (the kernel gathers the statistics of the y it stores); `check_norm_args` its rules.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import conv3x3, norm_sums

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
KERNEL = 9
SUPPORTED_CHANNELS = ((3, 32), (32, 3))   # (Cin, Cout): conv1 and deconv3 of the style network
FP32_OUTPUT_CHANNELS = ((32, 3),)


PADS = (0, 4)
NORM_CHANNELS = 32   # the prologue norm exists for the head (deconv3) only


def check_args(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out_float32: bool,
               scale: torch.Tensor | None = None, shift: torch.Tensor | None = None, pad: int = 0, *,
               name: str = "conv9x9") -> None:
    """Raise ValueError naming the argument and the rule it breaks (messages start with `name`)."""
    if x.dim() != 4:
        raise ValueError(f"{name}: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if weight.dim() != 4 or tuple(weight.shape[2:]) != (KERNEL, KERNEL):
        raise ValueError(f"{name}: weight must have shape (Cout, Cin, 9, 9), got {tuple(weight.shape)}")
    if weight.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"{name}: weight dtype {weight.dtype} is unsupported (float16, bfloat16)")
    if x.dtype != weight.dtype and not (x.dtype == torch.float32 and weight.shape[1] == 3):
        raise ValueError(f"{name}: x dtype {x.dtype} must equal the weight dtype {weight.dtype} "
                         "(or be float32 for Cin=3)")
    if weight.device != x.device:
        raise ValueError(f"{name}: weight is on {weight.device}, x on {x.device}")
    cout, cin = weight.shape[:2]
    if x.shape[1] != cin:
        raise ValueError(f"{name}: x has {x.shape[1]} channels but weight expects Cin={cin}")
    if (cin, cout) not in SUPPORTED_CHANNELS:
        raise ValueError(f"{name}: (Cin, Cout) = ({cin}, {cout}) is unsupported; supported: "
                         f"{SUPPORTED_CHANNELS} (other layers use cuDNN)")
    if out_float32 and (cin, cout) not in FP32_OUTPUT_CHANNELS:
        raise ValueError(f"{name}: out_float32 is only supported for (Cin, Cout) in {FP32_OUTPUT_CHANNELS}")
    if pad not in PADS:
        raise ValueError(f"{name}: pad must be 0 or 4, got {pad}")
    h, w = x.shape[2:]
    if h + 2 * pad < KERNEL or w + 2 * pad < KERNEL:
        raise ValueError(f"{name}: x padded by {pad} must be at least 9x9 (H, W >= {KERNEL - 2 * pad}), "
                         f"got {h}x{w}")
    if h <= pad or w <= pad:
        raise ValueError(f"{name}: a reflection pad of {pad} needs H, W > {pad}, got {h}x{w}")
    if (scale is None) != (shift is None):
        raise ValueError(f"{name}: scale and shift come together (both or neither)")
    if scale is not None and cin != NORM_CHANNELS:
        raise ValueError(f"{name}: scale/shift (the prologue norm) are only supported for Cin={NORM_CHANNELS}")
    for arg, t in (("scale", scale), ("shift", shift)):
        if t is not None and (tuple(t.shape) != (x.shape[0], cin) or t.dtype != torch.float32
                              or t.device != x.device):
            raise ValueError(f"{name}: {arg} must be a float32 ({x.shape[0]}, {cin}) tensor on {x.device}, "
                             f"got {t.dtype} {tuple(t.shape)} on {t.device}")
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != cout:
            raise ValueError(f"{name}: bias must have shape ({cout},), got {tuple(bias.shape)}")
        if not bias.is_floating_point():
            raise ValueError(f"{name}: bias must be a floating tensor, got {bias.dtype}")
        if bias.device != x.device:
            raise ValueError(f"{name}: bias is on {bias.device}, x on {x.device}")


def output_shape(x: torch.Tensor, weight: torch.Tensor, pad: int = 0) -> tuple[int, int, int, int]:
    n, _, h, w = x.shape
    return n, weight.shape[0], h + 2 * pad - KERNEL + 1, w + 2 * pad - KERNEL + 1


def conv9x9(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
            out_float32: bool = False, scale: torch.Tensor | None = None, shift: torch.Tensor | None = None,
            pad: int = 0) -> torch.Tensor:
    check_args(x, weight, bias, out_float32, scale, shift, pad)
    a = x.float()
    if scale is not None:
        a = torch.relu(a * scale[:, :, None, None] + shift[:, :, None, None])
    a = a.to(weight.dtype).float()              # what the norm op (or the cast) would have written
    if pad:
        a = F.pad(a, (pad, pad, pad, pad), mode="reflect")
    y = F.conv2d(a, weight.float(), None if bias is None else bias.float())
    return y.to(torch.float32 if out_float32 else weight.dtype).contiguous(memory_format=torch.channels_last)


NORM_NAME = "conv9x9_norm"


CONV1_PACKED_ELEMENTS = 5 * 32 * 64   # conv9x9_sm90.cu's B image: 5 ky-pair blocks of [32 n][64 k]


def pack_conv1_weight(weight: torch.Tensor) -> torch.Tensor:
    """conv1's (32, 3, 9, 9) weight as the Hopper kernel's B image in shared memory (conv9x9_sm90.cu),
    so that each CTA copies it instead of rearranging the raw weight (a divide per element, every CTA): block
    ky // 2 of 32 rows n × 64 k (k = 32·(ky % 2) + 3·kx + c; k ≥ 27 of each half zero), 128-byte
    rows with the 128-byte swizzle (16-byte chunk j of row n at slot j ^ (n % 8)). Same dtype and
    device, (5·32·64,) elements."""
    if weight.dim() != 4 or tuple(weight.shape) != (32, 3, 9, 9) or weight.dtype not in (torch.float16,
                                                                                        torch.bfloat16):
        raise ValueError(f"pack_conv1_weight: weight must be conv1's (32, 3, 9, 9) float16/bfloat16, got "
                         f"{weight.dtype} {tuple(weight.shape)}")
    dev = weight.device
    n, c, ky, kx = torch.meshgrid(*(torch.arange(s, device=dev) for s in (32, 3, 9, 9)), indexing="ij")
    k = 32 * (ky % 2) + 3 * kx + c
    slot = (k // 8) ^ (n % 8)
    index = (ky // 2) * (32 * 64) + n * 64 + slot * 8 + k % 8
    packed = torch.zeros(CONV1_PACKED_ELEMENTS, dtype=weight.dtype, device=dev)
    packed[index.reshape(-1)] = weight.reshape(-1)
    return packed


HEAD_PACKED_ELEMENTS = 5 * 9 * 2 * 32 * 4   # conv9x9.cu's head B fragments: [ky pair][kx][k step][lane][4]


def pack_head_weight(weight: torch.Tensor) -> torch.Tensor:
    """The head's (3, 32, 9, 9) weight as its mma.sync kernel's B fragments in shared memory
    (conv9x9.cu, head_kernel), so that each CTA copies them instead of gathering them from the raw
    weight: for ky pair G, kx, k step ks and lane (n = lane // 4 = 2·co + j, kernel row 2G + j), the
    four elements W[co][c][2G + j][kx] at c = 16·ks + 2·(lane % 4) + (0, 1, 8, 9); zero for n ≥ 6 and
    the missing tenth kernel row. Same dtype and device, (5·9·2·32·4,) elements."""
    if weight.dim() != 4 or tuple(weight.shape) != (3, 32, 9, 9) or weight.dtype not in (torch.float16,
                                                                                        torch.bfloat16):
        raise ValueError(f"pack_head_weight: weight must be the head's (3, 32, 9, 9) float16/bfloat16, got "
                         f"{weight.dtype} {tuple(weight.shape)}")
    dev = weight.device
    pair, kx, ks, lane, e = torch.meshgrid(*(torch.arange(s, device=dev) for s in (5, 9, 2, 32, 4)), indexing="ij")
    n = lane // 4
    co, ky = n // 2, 2 * pair + n % 2
    c = 16 * ks + 2 * (lane % 4) + torch.tensor([0, 1, 8, 9], device=dev)[e]
    valid = (n < 6) & (ky < 9)
    packed = torch.zeros(pair.shape, dtype=weight.dtype, device=dev)
    packed[valid] = weight[co[valid], c[valid], ky[valid], kx[valid]]
    return packed.reshape(-1)


def check_packed_weight(name: str, packed: torch.Tensor | None, weight: torch.Tensor, elements: int,
                        maker: str) -> None:
    """A packed weight, where given: `maker`'s shape, dtype and device."""
    if packed is None:
        return
    if (packed.dim() != 1 or packed.numel() != elements or packed.dtype != weight.dtype
            or packed.device != weight.device or not packed.is_contiguous()):
        raise ValueError(f"{name}: packed_weight must be {maker}(weight): a contiguous ({elements},) "
                         f"{weight.dtype} tensor on {weight.device}, got {packed.dtype} {tuple(packed.shape)} "
                         f"on {packed.device}")


def check_norm_args(x: torch.Tensor, weight: torch.Tensor, pad: int, norm_weight: torch.Tensor | None,
                    norm_bias: torch.Tensor | None, eps: float, state: torch.Tensor | None = None,
                    packed_weight: torch.Tensor | None = None) -> None:
    """conv9x9_norm's rules, ValueError naming the argument: conv9x9's for (x, weight, pad), conv1
    only, norm_scale_shift's for the norm (its output at least 2x2, (32,) vectors, eps > 0), and a
    state, where given, of at least norm_state_bytes(N, 32) uint8 bytes on x's device."""
    check_args(x, weight, None, False, None, None, pad, name=NORM_NAME)
    cout, cin = weight.shape[:2]
    if (cin, cout) != (3, 32):
        raise ValueError(f"{NORM_NAME}: only conv1, (Cin, Cout) = (3, 32), has the statistics epilogue, "
                         f"got ({cin}, {cout})")
    _, _, h, w = output_shape(x, weight, pad)
    if h < 2 or w < 2:
        raise ValueError(f"{NORM_NAME}: the output must be at least 2x2 for the InstanceNorm (norm_scale_shift's "
                         f"rule), got {h}x{w}")
    conv3x3._check_vector(NORM_NAME, "norm_weight", norm_weight, x, cout)
    conv3x3._check_vector(NORM_NAME, "norm_bias", norm_bias, x, cout)
    if not eps > 0:
        raise ValueError(f"{NORM_NAME}: eps must be > 0, got {eps}")
    check_packed_weight(NORM_NAME, packed_weight, weight, CONV1_PACKED_ELEMENTS, "pack_conv1_weight")
    if state is not None:
        need = conv3x3.norm_state_bytes(x.shape[0], cout)
        if (state.dtype != torch.uint8 or state.device != x.device or not state.is_contiguous()
                or state.numel() < need):
            raise ValueError(f"{NORM_NAME}: state must be a contiguous uint8 tensor of at least "
                             f"norm_state_bytes(N, 32) = {need} bytes on {x.device} (zeroed: "
                             f"styleforge.kernels.norm_state), got {state.dtype} {tuple(state.shape)} "
                             f"on {state.device}")


def conv9x9_norm(x: torch.Tensor, weight: torch.Tensor, pad: int = 0, norm_weight: torch.Tensor | None = None,
                 norm_bias: torch.Tensor | None = None, eps: float = 1e-5, state: torch.Tensor | None = None,
                 affine: bool = True, packed_weight: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, scale, shift): conv1 (no bias) and its InstanceNorm as one affine per (sample, channel),
    InstanceNorm(y; norm_weight, norm_bias, eps) = y·scale + shift. With affine (the default) the
    state is only checked: the twin computes the statistics directly. affine=False: y's sums go to
    the state for the next layer (reference/norm_sums.py) and scale, shift come back (0, 32).
    packed_weight (pack_conv1_weight(weight), for the Hopper kernel) is only checked here."""
    check_norm_args(x, weight, pad, norm_weight, norm_bias, eps, state, packed_weight)
    y = conv9x9(x, weight, None, False, None, None, pad)
    if not affine:
        if state is None:
            raise ValueError(f"{NORM_NAME}: affine=False leaves the sums in state: a state is needed")
        norm_sums.add_sums(state, y)
        empty = y.new_empty((0, 32), dtype=torch.float32)
        return y, empty, empty.clone()
    scale, shift = conv3x3.norm_scale_shift(y, norm_weight, norm_bias, eps)
    return y, scale, shift


FROM_SUMS_NAME = "conv9x9_from_sums"


def check_from_sums_args(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out_float32: bool,
                         pad: int, state: torch.Tensor, norm_weight: torch.Tensor | None,
                         norm_bias: torch.Tensor | None, eps: float, packed_weight: torch.Tensor | None = None
                         ) -> None:
    """conv9x9_from_sums's rules: conv9x9's for the head (32 → 3), a norm state of x's batch and 32
    channels, (32,) norm vectors, eps > 0, and pack_head_weight's form for a packed weight."""
    check_args(x, weight, bias, out_float32, None, None, pad, name=FROM_SUMS_NAME)
    if tuple(weight.shape[:2]) != (3, 32):
        raise ValueError(f"{FROM_SUMS_NAME}: only the head, (Cin, Cout) = (32, 3), applies a norm from sums, "
                         f"got ({weight.shape[1]}, {weight.shape[0]})")
    norm_sums.check_state(FROM_SUMS_NAME, "state", state, x, x.shape[0], 32)
    conv3x3._check_vector(FROM_SUMS_NAME, "norm_weight", norm_weight, x, 32)
    conv3x3._check_vector(FROM_SUMS_NAME, "norm_bias", norm_bias, x, 32)
    if not eps > 0:
        raise ValueError(f"{FROM_SUMS_NAME}: eps must be > 0, got {eps}")
    check_packed_weight(FROM_SUMS_NAME, packed_weight, weight, HEAD_PACKED_ELEMENTS, "pack_head_weight")


def conv9x9_from_sums(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out_float32: bool,
                      pad: int, state: torch.Tensor, norm_weight: torch.Tensor | None = None,
                      norm_bias: torch.Tensor | None = None, eps: float = 1e-5,
                      packed_weight: torch.Tensor | None = None) -> torch.Tensor:
    """The head, conv9x9(x, weight, bias, out_float32, scale, shift, pad), with (scale, shift) the
    InstanceNorm of x whose sums its producer left in `state` (taken, and the state zeroed).
    packed_weight (pack_head_weight(weight), for the CUDA kernel) is only checked here."""
    check_from_sums_args(x, weight, bias, out_float32, pad, state, norm_weight, norm_bias, eps, packed_weight)
    scale, shift = norm_sums.take_affine(state, x.shape[0], 32, x.shape[2] * x.shape[3], norm_weight,
                                                   norm_bias, eps)
    return conv9x9(x, weight, bias, out_float32, scale, shift, pad)
