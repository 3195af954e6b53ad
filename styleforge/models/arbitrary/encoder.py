"""The frozen VGG16 encoder of the arbitrary-style model: conv1_1 … conv5_1, reflection padding.

Same layer indices as torchvision's `vgg16().features[:26]` (Simonyan & Zisserman 2014), so a
torchvision state dict (`features.N.weight/bias`, N ≤ 24) loads with `strict=True`; torchvision
itself is not needed. Unlike the loss network in `models/vgg.py` (zero padding, Johnson et al.),
every 3×3 conv pads by reflection: zero padding makes the borders of the features look like
dark edges, which a decoder learns to paint as frames (the border-artifact fix of Huang &
Belongie 2017's AdaIN code and AdaAttN, Liu et al. 2021). Input is RGB 0–255; the ImageNet
normalisation happens inside. It is both the model's encoder and the training loss network, so
the shipped weights hold VGG once. Channel widths come from the weights (tests use narrow ones).
"""
from __future__ import annotations

import os

import torch
from torch import nn

from ..vgg import IMAGENET_MEAN, IMAGENET_STD, VGGWeightsError, vgg16_state_from_file
from .config import LEVEL_ENDS, LEVEL_STRIDE, LEVELS, VGG16_WIDTHS, level_index  # noqa: F401

CONV_INDICES = (0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24)
CONVS_PER_BLOCK = (2, 2, 3, 3, 1)


class VGGEncoder(nn.Module):
    """(N, 3, H, W) in 0–255 → {relu1_1, …, `last`} feature maps (H, W ≥ 2·stride of `last`).

    `depth`: the deepest level the encoder holds. A model whose transfer levels end at relu4_1
    ships only conv1_1…conv4_1 (6 MB in fp16 instead of 20); training uses the full depth.
    """

    def __init__(self, widths: tuple[int, ...] = VGG16_WIDTHS, depth: str = "relu5_1"):
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for block, (width, n) in enumerate(zip(widths, CONVS_PER_BLOCK)):
            for _ in range(n):
                layers += [nn.Conv2d(cin, width, 3, padding=1, padding_mode="reflect"), nn.ReLU(inplace=True)]
                cin = width
            if block < 4:
                layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers[:LEVEL_ENDS[depth]])
        self.widths = tuple(widths)
        self.depth = depth
        # Non-persistent: the state dict holds exactly torchvision's keys. (x/255 − m)/s folded.
        self.register_buffer("mean", 255.0 * torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", 255.0 * torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def channels(self, level: str) -> int:
        return self.widths[level_index(level)]

    def forward(self, x: torch.Tensor, last: str | None = None) -> dict[str, torch.Tensor]:
        last = last or self.depth
        if level_index(last) > level_index(self.depth):
            raise ValueError(f"this encoder ends at {self.depth}; {last} was asked for")
        h = (x - self.mean.to(x.dtype)) / self.std.to(x.dtype)
        out, start = {}, 0
        for level in LEVELS[:level_index(last) + 1]:
            stop = LEVEL_ENDS[level]
            for layer in self.features[start:stop]:
                h = layer(h)
            out[level] = h
            start = stop
        return out


def encoder_state_from_file(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The eleven convs (features.0 … features.24) of a torchvision-key VGG16 file, as fp32."""
    return vgg16_state_from_file(path, CONV_INDICES)


def build_encoder(state: dict[str, torch.Tensor], widths: tuple[int, ...] = VGG16_WIDTHS) -> VGGEncoder:
    """A frozen encoder (strict load) as deep as the convs in `state` reach; widths read from
    it, those of levels it lacks taken from `widths` (the model config's)."""
    conv = {level: LEVEL_ENDS[level] - 2 for level in LEVELS}     # the conv before the level's ReLU
    held = [level for level in LEVELS if f"features.{conv[level]}.weight" in state]
    if not held:
        raise VGGWeightsError("encoder weights hold no VGG16 conv1_1 (features.0.weight)")
    depth = held[-1]
    widths = tuple(state[f"features.{conv[level]}.weight"].shape[0] if level in held
                   else widths[i] for i, level in enumerate(LEVELS))
    encoder = VGGEncoder(widths, depth)
    try:
        encoder.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    except RuntimeError as exc:
        raise VGGWeightsError(f"encoder weights do not fit the VGG16 conv1_1…{depth.replace('relu', 'conv')} "
                              f"layout ({exc})") from None
    return encoder.eval().requires_grad_(False)
