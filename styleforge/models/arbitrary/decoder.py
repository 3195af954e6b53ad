"""The decoder: VGG features back to an image, mirrored from the encoder (AdaIN's layout, slimmer).

Huang & Belongie (2017)'s decoder, as AdaAttN uses it: 3×3 convs with reflection padding and
ReLU, and ×2 nearest upsampling followed by a conv instead of transposed convolutions, which
leave checkerboard patterns (Odena et al. 2016, "Deconvolution and Checkerboard Artifacts").
One conv fewer at 1/4 scale than AdaIN's (two, not four) to keep the shipped weights small. It
starts at the shallowest transfer level (relu3_1 or relu4_1) and predicts the ImageNet-normalised
image, which `ArbitraryStyleNet` maps back to 0–255. No normalisation layers, no clamping here.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .encoder import level_index


class ConvReLU(nn.Sequential):
    def __init__(self, cin: int, cout: int, relu: bool = True):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, padding_mode="reflect"))
        if relu:
            self.append(nn.ReLU(inplace=True))


class Upsample(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


def build_decoder(widths: tuple[int, ...], start: str) -> nn.Sequential:
    """widths: the encoder's (w1, …, w5); start: the level whose features come in."""
    w1, w2, w3, w4 = widths[:4]
    stages = {
        "relu4_1": [ConvReLU(w4, w3), Upsample()],
        "relu3_1": [ConvReLU(w3, w3), ConvReLU(w3, w2), Upsample()],
        "relu2_1": [ConvReLU(w2, w2), ConvReLU(w2, w1), Upsample()],
        "relu1_1": [ConvReLU(w1, w1), ConvReLU(w1, 3, relu=False)],
    }
    first = level_index(start)
    if not 2 <= first <= 3:
        raise ValueError(f"the decoder starts at relu3_1 or relu4_1, not {start}")
    layers: list[nn.Module] = []
    for level in ("relu4_1", "relu3_1", "relu2_1", "relu1_1")[3 - first:]:
        layers += stages[level]
    return nn.Sequential(*layers)
