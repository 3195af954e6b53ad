"""Benchmark cases for the tensor-core 9×9 convolution op (`styleforge bench --ops` runs them).

The network's two 9×9 layers at their real shapes on pre-padded channels_last input: conv1
(3→32, the image in 0–255 reflection-padded by 4, no bias: InstanceNorm follows) and deconv3
(32→3 on IN5's padded output, with bias; the op writes fp32 directly, cuDNN's result is cast as
the engine does). 512², 1080p and 4K in bf16 and fp16 (quick: 512² and 1080p, bf16). Providers:
"cudnn" (F.conv2d, padding=0, same dtype — the fused engine's path so far) and "styleforge" (the
op). The reference is the op's fp32 twin. `flops` counts 2·Cin·81·Cout multiply-adds per output
pixel (no padding of K or N).

The `_fused` cases time the layers as the engine runs them, with the work around them:
conv1_fused from the fp32 NCHW image (cudnn: reflection pad + cast + F.conv2d; styleforge: the op
with pad=4 reading the image), deconv3_fused from deconv2's raw output (cudnn: the InstanceNorm
op's ReLU'd, padded output + F.conv2d; styleforge: the op applying IN5 on load from (scale, shift)
computed beforehand — in the fused chain deconv2's epilogue gathers them). This module only
builds cases; timing and gating are the harness's.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import kernels
from ..kernels.reference import conv9x9 as reference_conv9x9
from .cases import OpCase

RESOLUTIONS = {"512": (512, 512), "1080p": (1080, 1920), "4k": (2160, 3840)}
LAYERS = {"conv1": (3, 32, False), "deconv3": (32, 3, True)}   # cin, cout, bias (and fp32 output)


def _case(layer: str, label: str, h: int, w: int, dtype: torch.dtype, device: torch.device) -> OpCase:
    cin, cout, head = LAYERS[layer]
    generator = torch.Generator(device=device).manual_seed(0)
    if layer == "conv1":
        x = torch.rand(1, cin, h + 8, w + 8, generator=generator, device=device) * 255
    else:
        x = torch.relu(torch.randn(1, cin, h + 8, w + 8, generator=generator, device=device))
    x = x.to(dtype).contiguous(memory_format=torch.channels_last)
    weight = (torch.randn(cout, cin, 9, 9, generator=generator, device=device) / (cin * 81) ** 0.5).to(dtype)
    weight = weight.contiguous(memory_format=torch.channels_last)
    bias32 = torch.randn(cout, generator=generator, device=device) if head else None
    bias = None if bias32 is None else bias32.to(dtype)

    def cudnn() -> torch.Tensor:
        y = F.conv2d(x, weight, bias)
        return y.float() if head else y

    es = x.element_size()
    out_bytes = h * w * cout * (4 if head else es)
    return OpCase(
        op=f"conv9x9_{layer}",
        shape=f"1x{cin}x{h + 8}x{w + 8}->{cout} ({label})",
        dtype=dtype,
        reference=lambda: reference_conv9x9.conv9x9(x, weight, bias32, head).float(),
        providers={"cudnn": cudnn,
                   "styleforge": lambda: kernels.conv9x9(x, weight, bias32, out_float32=head)},
        bytes_moved=x.numel() * es + weight.numel() * es + out_bytes,
        flops=2 * cin * 81 * cout * h * w,
        rel_tol=2e-2,
        notes={"layer": layer, "input": "pre-padded by 4, channels_last",
               "output": "fp32" if head else str(dtype).removeprefix("torch.")},
    )


def _fused_case(layer: str, label: str, h: int, w: int, dtype: torch.dtype, device: torch.device) -> OpCase:
    cin, cout, head = LAYERS[layer]
    generator = torch.Generator(device=device).manual_seed(0)
    weight = (torch.randn(cout, cin, 9, 9, generator=generator, device=device) / (cin * 81) ** 0.5).to(dtype)
    weight_cl = weight.contiguous(memory_format=torch.channels_last)
    if layer == "conv1":
        x = torch.rand(1, cin, h, w, generator=generator, device=device) * 255
        scale = shift = gamma = beta = bias32 = bias = None
    else:
        x = (torch.randn(1, cin, h, w, generator=generator, device=device) * 3 + 5).to(dtype)
        x = x.contiguous(memory_format=torch.channels_last)
        gamma = torch.rand(cin, generator=generator, device=device) + 0.5
        beta = torch.randn(cin, generator=generator, device=device) * 0.2
        var, mean = torch.var_mean(x.float(), dim=(2, 3), unbiased=False)
        scale = gamma / torch.sqrt(var + 1e-5)
        shift = beta - mean * scale
        bias32 = torch.randn(cout, generator=generator, device=device)
        bias = bias32.to(dtype)

    def cudnn() -> torch.Tensor:
        if head:
            return F.conv2d(kernels.instance_norm(x, gamma, beta, relu=True, pad=4), weight_cl, bias).float()
        padded = F.pad(x, (4, 4, 4, 4), mode="reflect").to(dtype, memory_format=torch.channels_last)
        return F.conv2d(padded, weight_cl)

    es = torch.empty(0, dtype=dtype).element_size()
    out_bytes = h * w * cout * (4 if head else es)
    return OpCase(
        op=f"conv9x9_{layer}_fused",
        shape=f"1x{cin}x{h}x{w}->{cout} ({label})",
        dtype=dtype,
        reference=lambda: reference_conv9x9.conv9x9(x, weight, bias32, head, scale, shift, 4).float(),
        providers={"cudnn": cudnn,
                   "styleforge": lambda: kernels.conv9x9(x, weight, bias32, out_float32=head, scale=scale,
                                                          shift=shift, pad=4)},
        bytes_moved=x.numel() * x.element_size() + weight.numel() * es + out_bytes,
        flops=2 * cin * 81 * cout * h * w,
        rel_tol=2e-2,
        notes={"layer": layer, "output": "fp32" if head else str(dtype).removeprefix("torch."),
               "input": ("deconv2's raw output; IN5 (scale, shift) precomputed" if head
                         else "the fp32 NCHW image, unpadded")},
    )


def cases(device: torch.device, quick: bool = False) -> list[OpCase]:
    device = torch.device(device)
    if device.type == "cuda":
        kernels.ensure_cuda_kernels()
        names = ("512", "1080p") if quick else tuple(RESOLUTIONS)
        dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float16)
        specs = [(label, *RESOLUTIONS[label], dtype) for dtype in dtypes for label in names]
    else:   # a CPU run is a smoke test of the plumbing, at a toy size
        specs = [("32", 32, 32, torch.bfloat16)]
    return [make(layer, label, h, w, dtype, device) for label, h, w, dtype in specs for layer in LAYERS
            for make in (_case, _fused_case)]
