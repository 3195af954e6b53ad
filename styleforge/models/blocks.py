"""Building blocks of the Johnson et al. (2016) style network.

Names and structure follow pytorch/examples `fast_neural_style/neural_style/transformer_net.py`
so its checkpoints load with `strict=True`. These modules are the reference (pure PyTorch)
execution; the fused engine (`styleforge.engine.runner`) runs the same parameters through the
custom kernels instead of re-declaring the network.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ConvLayer(nn.Module):
    """Reflection pad of k//2, then a convolution (padding=0)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(nn.Module):
    """conv-IN-ReLU-conv-IN plus the identity (He et al. 2016, as used by Johnson et al.)."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.in1(self.conv1(x)))
        return self.in2(self.conv2(out)) + x


class UpsampleConvLayer(nn.Module):
    """Nearest ×upsample, reflection pad, convolution: avoids transposed-conv checkerboards."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int,
                 upsample: int | None = None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.upsample:
            x = F.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))
