"""The pure-PyTorch twin of `styleforge::conv9x9`: test oracle, benchmark baseline, fallback.

`conv9x9(x, weight, bias, out_float32, scale, shift, pad)` is a VALID 9×9 convolution, stride 1,
of x' = reflection_pad(pad)(round(relu(x·scale + shift))): x (N, Cin, H, W) →
(N, Cout, H + 2·pad − 8, W + 2·pad − 8), computed in fp32 and returned channels_last in the
weight's dtype (fp16/bf16; or fp32 with `out_float32`). pad is 0 (x already padded) or 4 (the
layer's own reflection pad). The norm (scale, shift: float32 (N, Cin), ReLU after) is the
InstanceNorm before the head, so its output is rounded to the dtype as the norm op rounds it;
without it x' = x rounded to the dtype, and x may be float32 for conv1 (the image). Only the
network's two 9×9 layers are supported — (Cin, Cout) = (3, 32), conv1, and (32, 3), deconv3 (the
only one with fp32 output or a norm) — so the twin and the CUDA kernel (`csrc/cuda/conv9x9.cu`)
refuse exactly the same calls.
`check_args` and `output_shape` are the one statement of those rules: the fake impl in
`ops_conv.py` uses them and `csrc/bindings_conv.cpp` mirrors them. Not fast; not a general conv.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
KERNEL = 9
SUPPORTED_CHANNELS = ((3, 32), (32, 3))   # (Cin, Cout): conv1 and deconv3 of the style network
FP32_OUTPUT_CHANNELS = ((32, 3),)


PADS = (0, 4)
NORM_CHANNELS = 32   # the prologue norm exists for the head (deconv3) only


def check_args(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out_float32: bool,
               scale: torch.Tensor | None = None, shift: torch.Tensor | None = None, pad: int = 0) -> None:
    """Raise ValueError naming the argument and the rule it breaks."""
    if x.dim() != 4:
        raise ValueError(f"conv9x9: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if weight.dim() != 4 or tuple(weight.shape[2:]) != (KERNEL, KERNEL):
        raise ValueError(f"conv9x9: weight must have shape (Cout, Cin, 9, 9), got {tuple(weight.shape)}")
    if weight.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"conv9x9: weight dtype {weight.dtype} is unsupported (float16, bfloat16)")
    if x.dtype != weight.dtype and not (x.dtype == torch.float32 and weight.shape[1] == 3):
        raise ValueError(f"conv9x9: x dtype {x.dtype} must equal the weight dtype {weight.dtype} "
                         "(or be float32 for Cin=3)")
    if weight.device != x.device:
        raise ValueError(f"conv9x9: weight is on {weight.device}, x on {x.device}")
    cout, cin = weight.shape[:2]
    if x.shape[1] != cin:
        raise ValueError(f"conv9x9: x has {x.shape[1]} channels but weight expects Cin={cin}")
    if (cin, cout) not in SUPPORTED_CHANNELS:
        raise ValueError(f"conv9x9: (Cin, Cout) = ({cin}, {cout}) is unsupported; supported: "
                         f"{SUPPORTED_CHANNELS} (other layers use cuDNN)")
    if out_float32 and (cin, cout) not in FP32_OUTPUT_CHANNELS:
        raise ValueError(f"conv9x9: out_float32 is only supported for (Cin, Cout) in {FP32_OUTPUT_CHANNELS}")
    if pad not in PADS:
        raise ValueError(f"conv9x9: pad must be 0 or 4, got {pad}")
    h, w = x.shape[2:]
    if h + 2 * pad < KERNEL or w + 2 * pad < KERNEL:
        raise ValueError(f"conv9x9: x padded by {pad} must be at least 9x9 (H, W >= {KERNEL - 2 * pad}), "
                         f"got {h}x{w}")
    if h <= pad or w <= pad:
        raise ValueError(f"conv9x9: a reflection pad of {pad} needs H, W > {pad}, got {h}x{w}")
    if (scale is None) != (shift is None):
        raise ValueError("conv9x9: scale and shift come together (both or neither)")
    if scale is not None and cin != NORM_CHANNELS:
        raise ValueError(f"conv9x9: scale/shift (the prologue norm) are only supported for Cin={NORM_CHANNELS}")
    for arg, t in (("scale", scale), ("shift", shift)):
        if t is not None and (tuple(t.shape) != (x.shape[0], cin) or t.dtype != torch.float32
                              or t.device != x.device):
            raise ValueError(f"conv9x9: {arg} must be a float32 ({x.shape[0]}, {cin}) tensor on {x.device}, "
                             f"got {t.dtype} {tuple(t.shape)} on {t.device}")
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != cout:
            raise ValueError(f"conv9x9: bias must have shape ({cout},), got {tuple(bias.shape)}")
        if not bias.is_floating_point():
            raise ValueError(f"conv9x9: bias must be a floating tensor, got {bias.dtype}")
        if bias.device != x.device:
            raise ValueError(f"conv9x9: bias is on {bias.device}, x on {x.device}")


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
