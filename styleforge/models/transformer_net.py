"""The Johnson et al. (2016) feed-forward style network, pytorch/examples layout.

Input and output are RGB in 0–255 (float), shape (N, 3, H, W); there is no output activation,
so callers clamp. H and W must be multiples of 4 to come back at the same size (two stride-2
convs, two ×2 upsamples); `styleforge.engine.pipeline` pads and crops for any size.
`width` is the first layer's channel count (the encoder doubles it twice): 32 is the full
network, `SLIM_WIDTH` the half-width one distilled from it for CPUs (~1/4 of the multiply-adds).
Both have the same module names, so a state dict's keys do not say which it is; its shapes do
(`width_of`).
"""
from __future__ import annotations

import torch
from torch import nn

from .blocks import ConvLayer, ResidualBlock, UpsampleConvLayer

NUM_RESIDUAL_BLOCKS = 5
FULL_WIDTH = 32
SLIM_WIDTH = 16
MODEL_WIDTHS = {"full": FULL_WIDTH, "slim": SLIM_WIDTH}


class TransformerNet(nn.Module):
    def __init__(self, width: int = FULL_WIDTH):
        super().__init__()
        c1, c2, c3 = width, 2 * width, 4 * width
        self.width = width
        self.conv1 = ConvLayer(3, c1, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(c1, affine=True)
        self.conv2 = ConvLayer(c1, c2, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(c2, affine=True)
        self.conv3 = ConvLayer(c2, c3, kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d(c3, affine=True)
        self.res1 = ResidualBlock(c3)
        self.res2 = ResidualBlock(c3)
        self.res3 = ResidualBlock(c3)
        self.res4 = ResidualBlock(c3)
        self.res5 = ResidualBlock(c3)
        self.deconv1 = UpsampleConvLayer(c3, c2, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(c2, affine=True)
        self.deconv2 = UpsampleConvLayer(c2, c1, kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d(c1, affine=True)
        self.deconv3 = ConvLayer(c1, 3, kernel_size=9, stride=1)
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


def width_of(shapes: dict[str, tuple[int, ...]]) -> int:
    """The `width` of the network a state dict's shapes belong to (conv1's output channels)."""
    shape = shapes.get("conv1.conv2d.weight")
    return int(shape[0]) if shape else FULL_WIDTH


def count_flops(height: int, width: int, batch: int = 1, channels: int = FULL_WIDTH) -> int:
    """Multiply-adds ×2 of every convolution at an (already padded to ×4) input size, for the
    network of `channels` width.

    Norms, pads and the residual adds are left out: they are memory-bound and <1% of the FLOPs.
    """
    c1, c2, c3 = channels, 2 * channels, 4 * channels
    layers = [  # (in, out, kernel, output scale relative to the input)
        (3, c1, 9, 1.0), (c1, c2, 3, 0.5), (c2, c3, 3, 0.25),
        *[(c3, c3, 3, 0.25)] * (2 * NUM_RESIDUAL_BLOCKS),
        (c3, c2, 3, 0.5), (c2, c1, 3, 1.0), (c1, 3, 9, 1.0),
    ]
    total = 0
    for cin, cout, k, scale in layers:
        pixels = int(height * scale) * int(width * scale)
        total += 2 * cin * cout * k * k * pixels
    return total * batch
