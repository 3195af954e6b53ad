"""The pure-PyTorch twin of `styleforge::conv9x9`: test oracle, benchmark baseline, fallback.

`conv9x9(x, weight, bias, out_float32)` is a VALID 9×9 convolution, stride 1, on an input that
is already padded (the network's reflection pad of 4 is written by the op before it): x
(N, Cin, Hp, Wp) fp16/bf16 → (N, Cout, Hp − 8, Wp − 8), computed in fp32 and returned
channels_last in x's dtype (or fp32 with `out_float32`). Only the network's two 9×9 layers are
supported — (Cin, Cout) = (3, 32), conv1, and (32, 3), deconv3 (the only one with fp32 output)
— so the twin and the CUDA kernel (`csrc/cuda/conv9x9.cu`) refuse exactly the same calls.
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


def check_args(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out_float32: bool) -> None:
    """Raise ValueError naming the argument and the rule it breaks."""
    if x.dim() != 4:
        raise ValueError(f"conv9x9: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"conv9x9: x dtype {x.dtype} is unsupported (float16, bfloat16)")
    if weight.dim() != 4 or tuple(weight.shape[2:]) != (KERNEL, KERNEL):
        raise ValueError(f"conv9x9: weight must have shape (Cout, Cin, 9, 9), got {tuple(weight.shape)}")
    if weight.dtype != x.dtype:
        raise ValueError(f"conv9x9: weight dtype {weight.dtype} must equal x dtype {x.dtype}")
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
    if x.shape[2] < KERNEL or x.shape[3] < KERNEL:
        raise ValueError(f"conv9x9: x must be pre-padded to at least 9x9 (H, W >= 9), got "
                         f"{x.shape[2]}x{x.shape[3]}")
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != cout:
            raise ValueError(f"conv9x9: bias must have shape ({cout},), got {tuple(bias.shape)}")
        if not bias.is_floating_point():
            raise ValueError(f"conv9x9: bias must be a floating tensor, got {bias.dtype}")
        if bias.device != x.device:
            raise ValueError(f"conv9x9: bias is on {bias.device}, x on {x.device}")


def output_shape(x: torch.Tensor, weight: torch.Tensor) -> tuple[int, int, int, int]:
    n, _, hp, wp = x.shape
    return n, weight.shape[0], hp - KERNEL + 1, wp - KERNEL + 1


def conv9x9(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
            out_float32: bool = False) -> torch.Tensor:
    check_args(x, weight, bias, out_float32)
    dtype = torch.float32 if out_float32 else x.dtype
    y = F.conv2d(x.float(), weight.float(), None if bias is None else bias.float())
    return y.to(dtype).contiguous(memory_format=torch.channels_last)
