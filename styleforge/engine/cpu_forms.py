"""Which form of the arbitrary engine's glue runs where: on the CPU the NumPy forms of the palette
transport, the aimed last share, degrid and a painting's palette code (the same maps, a fraction
of the CPU time: docs/cpu.md), elsewhere the PyTorch ops, which run inside the engine's CUDA graph
(the palette code on the device, once per painting). Not here: the maps themselves."""
from __future__ import annotations

import torch

from ..models.arbitrary.palette import PaletteCode, aimed_transport, encode_palette, transport
from ..models.arbitrary.palette_code_numpy import encode_palette_numpy
from ..models.arbitrary.palette_numpy import transport_numpy
from ..models.arbitrary.palette_share_numpy import aimed_transport_numpy
from .degrid import degrid
from .degrid_numpy import degrid_numpy


def palette_transport(image: torch.Tensor, code: PaletteCode, strength: float = 1.0) -> torch.Tensor:
    """`transport`: its NumPy form on the CPU, the PyTorch op elsewhere."""
    if image.device.type == "cpu":
        return transport_numpy(image, code, strength)
    return transport(image, code, strength)


def palette_code(painting: torch.Tensor) -> PaletteCode:
    """`encode_palette`: its NumPy form on the CPU, the PyTorch op elsewhere."""
    if painting.device.type == "cpu":
        return encode_palette_numpy(painting)
    return encode_palette(painting)


def aimed_palette(image: torch.Tensor, code: PaletteCode, base: float, target: float,
                  cap: float) -> tuple[torch.Tensor, torch.Tensor]:
    """`aimed_transport`: its NumPy form on the CPU, the PyTorch op elsewhere."""
    if image.device.type == "cpu":
        return aimed_transport_numpy(image, code, base, target, cap)
    return aimed_transport(image, code, base, target, cap)


def remove_grid(image: torch.Tensor) -> torch.Tensor:
    """`degrid`: its NumPy form on the CPU, the PyTorch op elsewhere."""
    if image.device.type == "cpu":
        return degrid_numpy(image)
    return degrid(image)
