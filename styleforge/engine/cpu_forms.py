"""Which form of the arbitrary engine's glue runs where: on the CPU the NumPy forms of the palette
transport and degrid (the same maps, a fraction of the CPU time: docs/cpu.md), elsewhere the
PyTorch ops, which run inside the engine's CUDA graph. Not here: the maps themselves."""
from __future__ import annotations

import torch

from ..models.arbitrary.palette import PaletteCode, transport
from ..models.arbitrary.palette_numpy import transport_numpy
from .degrid import degrid
from .degrid_numpy import degrid_numpy


def palette_transport(image: torch.Tensor, code: PaletteCode, strength: float = 1.0) -> torch.Tensor:
    """`transport`: its NumPy form on the CPU, the PyTorch op elsewhere."""
    if image.device.type == "cpu":
        return transport_numpy(image, code, strength)
    return transport(image, code, strength)


def remove_grid(image: torch.Tensor) -> torch.Tensor:
    """`degrid`: its NumPy form on the CPU, the PyTorch op elsewhere."""
    if image.device.type == "cpu":
        return degrid_numpy(image)
    return degrid(image)
