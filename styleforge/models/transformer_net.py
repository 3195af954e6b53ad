"""The Johnson et al. (2016) feed-forward style network, pytorch/examples layout.

Input and output are RGB in 0–255 (float), shape (N, 3, H, W); there is no output activation,
so callers clamp. H and W must be multiples of 4 to come back at the same size (two stride-2
convs, two ×2 upsamples); `styleforge.engine.pipeline` pads and crops for any size.
"""
from __future__ import annotations

import torch
from torch import nn

from .blocks import ConvLayer, ResidualBlock, UpsampleConvLayer

NUM_RESIDUAL_BLOCKS = 5


class TransformerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = ConvLayer(3, 32, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(32, affine=True)
        self.conv2 = ConvLayer(32, 64, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(64, affine=True)
        self.conv3 = ConvLayer(64, 128, kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d(128, affine=True)
        self.res1 = ResidualBlock(128)
        self.res2 = ResidualBlock(128)
        self.res3 = ResidualBlock(128)
        self.res4 = ResidualBlock(128)
        self.res5 = ResidualBlock(128)
        self.deconv1 = UpsampleConvLayer(128, 64, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(64, affine=True)
        self.deconv2 = UpsampleConvLayer(64, 32, kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d(32, affine=True)
        self.deconv3 = ConvLayer(32, 3, kernel_size=9, stride=1)
        self.relu = nn.ReLU()

    def residual_blocks(self) -> list[ResidualBlock]:
        return [getattr(self, f"res{i}") for i in range(1, NUM_RESIDUAL_BLOCKS + 1)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.in1(self.conv1(x)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        for block in self.residual_blocks():
            y = block(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        return self.deconv3(y)


def count_flops(height: int, width: int, batch: int = 1) -> int:
    """Multiply-adds ×2 of every convolution at an (already padded to ×4) input size.

    Norms, pads and the residual adds are left out: they are memory-bound and <1% of the FLOPs.
    """
    layers = [  # (in, out, kernel, output scale relative to the input)
        (3, 32, 9, 1.0), (32, 64, 3, 0.5), (64, 128, 3, 0.25),
        *[(128, 128, 3, 0.25)] * (2 * NUM_RESIDUAL_BLOCKS),
        (128, 64, 3, 0.5), (64, 32, 3, 1.0), (32, 3, 9, 1.0),
    ]
    total = 0
    for cin, cout, k, scale in layers:
        pixels = int(height * scale) * int(width * scale)
        total += 2 * cin * cout * k * k * pixels
    return total * batch
