"""The pure-PyTorch twin of the fused InstanceNorm op: test oracle, benchmark baseline, fallback.

`instance_norm` computes, per (n, c) plane with statistics in fp32 (biased variance, as
`F.instance_norm`): y = (x − mean)·rsqrt(var + eps)·weight + bias, then + residual, ReLU,
nearest ×upsample, and reflection pad, returning x's dtype in x's memory format. It is what
the CUDA kernel (`csrc/instance_norm/instance_norm.cu`) must equal; it is not fast (each step is a
separate pass). `check_args`, `output_shape` and `output_channels_last` are the one statement
of the op's rules: the fake impl in `instance_norm.py` uses them, and `csrc/bindings.cpp` mirrors them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_PAD = 4          # the network's widest pad (the 9×9 convolutions); the kernel assumes it
UPSAMPLES = (1, 2)


def check_args(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
               residual: torch.Tensor | None, eps: float, pad: int, upsample: int) -> None:
    """Raise ValueError naming the argument and the rule it breaks."""
    if x.dim() != 4:
        raise ValueError(f"instance_norm: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"instance_norm: x dtype {x.dtype} is unsupported (float32, float16, bfloat16)")
    _, c, h, w = x.shape
    if h < 1 or w < 1:
        raise ValueError(f"instance_norm: x must have H, W >= 1, got H={h}, W={w}")
    if upsample not in UPSAMPLES:
        raise ValueError(f"instance_norm: upsample must be 1 or 2, got {upsample}")
    if not 0 <= pad <= MAX_PAD:
        raise ValueError(f"instance_norm: pad must be in 0..{MAX_PAD}, got {pad}")
    if pad >= h * upsample or pad >= w * upsample:
        raise ValueError(f"instance_norm: reflection pad {pad} must be smaller than the upsampled "
                         f"plane {h * upsample}x{w * upsample} (pad < H·upsample and pad < W·upsample)")
    if not eps >= 0.0 or eps == float("inf"):
        raise ValueError(f"instance_norm: eps must be finite and >= 0, got {eps}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        if t.dim() != 1 or t.shape[0] != c:
            raise ValueError(f"instance_norm: {name} must have shape ({c},) (one per channel of x), "
                             f"got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise ValueError(f"instance_norm: {name} must be a floating tensor, got {t.dtype}")
        if t.device != x.device:
            raise ValueError(f"instance_norm: {name} is on {t.device}, x on {x.device}")
    if residual is not None:
        if tuple(residual.shape) != tuple(x.shape):
            raise ValueError(f"instance_norm: residual must have x's shape {tuple(x.shape)}, "
                             f"got {tuple(residual.shape)}")
        if residual.dtype != x.dtype:
            raise ValueError(f"instance_norm: residual dtype {residual.dtype} must equal x dtype {x.dtype}")
        if residual.device != x.device:
            raise ValueError(f"instance_norm: residual is on {residual.device}, x on {x.device}")


def output_shape(x: torch.Tensor, pad: int, upsample: int) -> tuple[int, int, int, int]:
    n, c, h, w = x.shape
    return n, c, h * upsample + 2 * pad, w * upsample + 2 * pad


def output_channels_last(x: torch.Tensor) -> bool:
    """The output is channels_last iff x is channels_last and not also plain contiguous.

    Anything else (NCHW, or an arbitrary strided view) gives an NCHW-contiguous output.
    """
    return x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()


def instance_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                  residual: torch.Tensor | None = None, eps: float = 1e-5, relu: bool = False,
                  pad: int = 0, upsample: int = 1) -> torch.Tensor:
    check_args(x, weight, bias, residual, eps, pad, upsample)
    memory_format = torch.channels_last if output_channels_last(x) else torch.contiguous_format
    if x.numel() == 0:
        return torch.empty(output_shape(x, pad, upsample), dtype=x.dtype, device=x.device,
                           memory_format=memory_format)
    x32 = x.float()
    # Centre in two steps: x − mean is exact near the mean, but the fp32 mean itself is off by
    # up to half an ulp (3e-5 at 1000), so subtract the mean of the centred values as well.
    # A large mean then costs no precision (the CUDA kernel gets the same effect another way).
    centred = x32 - x32.mean(dim=(2, 3), keepdim=True)
    centred = centred - centred.mean(dim=(2, 3), keepdim=True)
    var = centred.square().mean(dim=(2, 3), keepdim=True)
    y = centred * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.float().view(1, -1, 1, 1)
    if bias is not None:
        y = y + bias.float().view(1, -1, 1, 1)
    if residual is not None:
        y = y + residual.float()
    if relu:
        y = torch.relu(y)
    if upsample != 1:
        y = y.repeat_interleave(upsample, dim=2).repeat_interleave(upsample, dim=3)
    if pad:
        y = F.pad(y, (pad, pad, pad, pad), mode="reflect")
    return y.to(x.dtype).contiguous(memory_format=memory_format)
