"""Benchmark cases for the fused InstanceNorm op (`styleforge bench --ops` runs them).

Each case is one norm of the style network at its real shape — 1×32×H×W (in1/in5 level),
1×64×H/2×W/2 (in2/in4), 1×128×H/4×W/4 (in3 and the residual blocks) — at 512², 1080p and
4K, in bf16 and fp32, channels_last, with affine + ReLU + a reflection pad of 1 (the encoder's
norm), plus a batch-2 1080p case. Providers: "torch" (F.instance_norm, relu and F.pad as
separate ops, the seed's path), "torch.compile" of that same function, and "styleforge" (the
op). The reference is the op's fp32 twin. This module only builds cases; timing, the
correctness gate and the bandwidth ceiling are the harness's.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import kernels
from ..kernels.reference import instance_norm as reference
from .cases import OpCase

RESOLUTIONS = {"512": (512, 512), "1080p": (1080, 1920), "4k": (2160, 3840)}
LEVELS = ((32, 1), (64, 2), (128, 4))     # (channels, downscale) of the network's norms
PAD = 1


def _torch_norm_relu_pad(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    y = F.instance_norm(x, weight=weight, bias=bias, eps=1e-5)
    return F.pad(torch.relu(y), (PAD, PAD, PAD, PAD), mode="reflect")


def _shapes(quick: bool) -> list[tuple[str, tuple[int, int, int, int]]]:
    names = ("512", "1080p") if quick else tuple(RESOLUTIONS)
    shapes = []
    for name in names:
        height, width = RESOLUTIONS[name]
        for channels, down in LEVELS:
            shapes.append((name, (1, channels, height // down, width // down)))
    if not quick:
        shapes.append(("1080p-batch2", (2, 32, 1080, 1920)))
    return shapes


def _case(shape: tuple[int, int, int, int], label: str, dtype: torch.dtype, device: torch.device,
          compiled) -> OpCase:
    n, c, h, w = shape
    generator = torch.Generator(device=device).manual_seed(0)
    # Conv outputs in a 0–255 network: a non-zero mean and a few tens of spread.
    x = (torch.randn(shape, generator=generator, device=device) * 30 + 40).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    weight = torch.rand(c, generator=generator, device=device) + 0.5
    bias = torch.randn(c, generator=generator, device=device) * 0.5
    weight_t, bias_t = weight.to(dtype), bias.to(dtype)   # F.instance_norm wants x's dtype
    es = x.element_size()
    in_bytes = x.numel() * es
    out_bytes = n * c * (h + 2 * PAD) * (w + 2 * PAD) * es
    return OpCase(
        op="instance_norm_relu_pad",
        shape=f"{n}x{c}x{h}x{w} ({label})",
        dtype=dtype,
        reference=lambda: reference.instance_norm(x.float(), weight, bias, None, 1e-5, True, PAD, 1),
        providers={
            "torch": lambda: _torch_norm_relu_pad(x, weight_t, bias_t),
            "torch.compile": lambda: compiled(x, weight_t, bias_t),
            "styleforge": lambda: kernels.instance_norm(x, weight, bias, relu=True, pad=PAD),
        },
        bytes_moved=in_bytes + out_bytes,
        rel_tol=2e-2 if dtype != torch.float32 else 1e-4,
        notes={"actual_bytes": 2 * in_bytes + out_bytes,
               "traffic": "the op reads x twice (statistics, then apply) and writes the padded "
                          "output once; bytes_moved counts one read",
               "options": "affine, relu, reflection pad 1, channels_last"},
    )


def cases(device: torch.device, quick: bool = False) -> list[OpCase]:
    device = torch.device(device)
    if device.type == "cuda":
        kernels.ensure_cuda_kernels()
    compiled = torch.compile(_torch_norm_relu_pad, dynamic=False)
    dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float32)
    if device.type != "cuda":   # a CPU run is a smoke test of the plumbing, at toy sizes
        specs = [((1, c, 64 // d, 64 // d), "64", dtypes[0]) for c, d in LEVELS]
    else:
        specs = [(shape, label, dtype) for dtype in dtypes for label, shape in _shapes(quick)]
    # Every case is a static-shape specialisation of the same function; dynamo's default limit
    # of 8 per function would silently run the later ones eagerly.
    import torch._dynamo.config as dynamo_config
    dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, len(specs) + 8)
    return [_case(shape, label, dtype, device, compiled) for shape, label, dtype in specs]
