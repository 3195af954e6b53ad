"""Benchmark cases for the fused residual-block convolution (`styleforge bench --ops` runs them).

One link of the residual chain at its real shapes (128 channels; the 128² plane of a 512² frame,
the 270×480 plane of 1080p, 540×960 of 4K), channels_last, bf16 and fp16 (quick: bf16, 512² and
1080p). The input x is the previous convolution's raw output and the link is "apply the previous
InstanceNorm (+ReLU), convolve 3×3 with reflection padding":
  cudnn       kernels.instance_norm(x, relu, pad=1) then F.conv2d (the fused engine's cuDNN plan)
  styleforge  conv3x3_norm(x, packed weight, scale, shift, relu): the norm in the prologue, and
              the next norm's statistics and (scale, shift) in the epilogue and hand-off kernel,
              which the cuDNN link leaves to the next link's standalone norm
The previous norm's (scale, shift) is computed once beforehand (in the chain it comes from the
previous link's epilogue). Only the convolution output is compared. `flops` counts 2·128·9·128
per output pixel. Hopper only for the op (elsewhere the case is skipped). This module only builds
cases; timing and gating are the harness's.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import kernels
from ..kernels.reference import conv3x3 as reference_conv3x3
from .cases import OpCase

C = 128
PLANES = {"512": (128, 128), "1080p": (270, 480), "4k": (540, 960)}


def _case(label: str, h: int, w: int, dtype: torch.dtype, device: torch.device) -> OpCase:
    generator = torch.Generator(device=device).manual_seed(0)
    x = (torch.randn(1, C, h, w, generator=generator, device=device) * 2 + 0.5).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    weight = (torch.randn(C, C, 3, 3, generator=generator, device=device) / (C * 9) ** 0.5).to(dtype)
    weight_cl = weight.contiguous(memory_format=torch.channels_last)
    packed = reference_conv3x3.pack_weight(weight)
    gamma, beta = torch.rand(C, generator=generator, device=device) + 0.5, torch.randn(C, generator=generator,
                                                                                        device=device)
    scale, shift = reference_conv3x3.norm_scale_shift(x, gamma, beta)

    def cudnn() -> torch.Tensor:
        return F.conv2d(kernels.instance_norm(x, gamma, beta, relu=True, pad=1), weight_cl)

    def fused() -> torch.Tensor:
        return kernels.conv3x3_norm(x, packed, scale, shift, relu=True, norm_weight=gamma, norm_bias=beta)[0]

    es = x.element_size()
    return OpCase(
        op="conv3x3_norm",
        shape=f"1x{C}x{h}x{w} ({label})",
        dtype=dtype,
        reference=lambda: reference_conv3x3.conv3x3_norm(x, packed, scale, shift, None, True, 1, False, gamma,
                                                         beta, 1e-5)[0].float(),
        providers={"cudnn": cudnn, "styleforge": fused},
        bytes_moved=2 * x.numel() * es + packed.numel() * es,
        flops=2 * C * 9 * C * h * w,
        rel_tol=2e-2,
        notes={"link": "IN(+ReLU) apply -> 3x3 reflection conv (+ next IN's statistics in the op)"},
    )


def cases(device: torch.device, quick: bool = False) -> list[OpCase]:
    device = torch.device(device)
    if device.type != "cuda" or not kernels.conv3x3_norm_supported(device):
        return []   # the op's kernel is Hopper-only; the twin is covered by the tests
    names = ("512", "1080p") if quick else tuple(PLANES)
    dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float16)
    return [_case(label, *PLANES[label], dtype, device) for dtype in dtypes for label in names]
