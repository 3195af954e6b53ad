"""The steps of an exact tiled run: the network's convolutions in order, the full-frame stores each
reads and writes, their shapes and dtypes, when each is last read, and the peak bytes they take.

Pure bookkeeping over `engine.plan.describe` (which walks the `TransformerNet` modules): nothing
here runs a layer or re-declares the network. The runner that executes these steps in row bands
is `engine.tiling`; the memory estimates that choose between modes are `engine.memory`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..models.transformer_net import TransformerNet
from .plan import Layer, describe


@dataclass(frozen=True)
class Step:
    """One convolution, the InstanceNorm (+ ReLU) that follows it, and where its data lives."""
    spec: Layer                        # the layer as `plan.describe` gives it
    source: str                        # store read (its pending norm/ReLU applied on read)
    target: str                        # store written
    residual: str | None = None        # ResidualBlock: after the norm, added into this store

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def conv(self) -> nn.Conv2d:
        return self.spec.conv

    @property
    def norm(self) -> nn.InstanceNorm2d | None:
        return self.spec.norm

    @property
    def relu(self) -> bool:
        return self.spec.relu

    @property
    def kernel(self) -> int:
        return self.conv.kernel_size[0]

    @property
    def stride(self) -> int:
        return self.spec.stride

    @property
    def pad(self) -> int:
        return self.spec.pad

    @property
    def upsample(self) -> int:
        return self.spec.upsample

    def out_size(self, size: int) -> int:
        return (size * self.upsample + 2 * self.pad - self.kernel) // self.stride + 1


def plan_steps(model: TransformerNet) -> list[Step]:
    """The network's convolutions in order (`plan.describe`), each with the stores it reads and
    writes: encoder and decoder layers chain through their own stores, a residual block's two
    convolutions through "res_a"/"res_b" with its output added into the stream it read."""
    steps, source = [], "image"
    for layer in describe(model):
        if layer.block_start:
            steps.append(Step(layer, source, "res_a"))
        elif layer.skip:
            steps.append(Step(layer, "res_a", "res_b", residual=source))
        else:
            target = "out" if layer.role == "head" else f"{layer.name}.out"
            steps.append(Step(layer, source, target))
            source = target
    return steps


def receptive_halo(steps: list[Step]) -> int:
    """Input pixels on each side that can reach an output pixel (54 for the Johnson network)."""
    halo, scale = 0, 1.0   # scale: input pixels per pixel of the current activation
    for step in steps:
        scale /= step.upsample
        halo += step.pad * scale
        scale *= step.stride
    return int(-(-halo // 1))


def store_shapes(steps: list[Step], height: int, width: int) -> dict[str, tuple[int, int, int]]:
    shapes = {"image": (3, height, width)}
    for step in steps:
        _, h, w = shapes[step.source]
        shapes[step.target] = (step.conv.out_channels, step.out_size(h), step.out_size(w))
    return shapes


def last_reads(steps: list[Step]) -> dict[str, int]:
    last = {}
    for index, step in enumerate(steps):
        last[step.source] = index
        if step.residual:   # the residual add reads the stream and the block's output
            last[step.residual] = last[step.target] = index
    return last


def store_dtype(name: str, steps: list[Step], dtype: torch.dtype) -> torch.dtype:
    # The output is float32 (the fused head accumulates into it). The residual stream stays in the
    # run's dtype, as the fused engine keeps it: rounding where that engine rounds is what makes
    # tiled bf16 agree with untiled bf16 (both are equally far from fp32).
    return wide_dtype(dtype) if name == "out" else dtype


def wide_dtype(dtype: torch.dtype) -> torch.dtype:
    """The precision norms and adds run in: fp32, or float64 for a float64 network."""
    return torch.promote_types(dtype, torch.float32)


def exact_store_bytes(steps: list[Step], height: int, width: int, dtype: torch.dtype) -> int:
    """Peak bytes of the full-frame stores alive at once during one image (the input excluded)."""
    shapes, last = store_shapes(steps, height, width), last_reads(steps)
    live: dict[str, int] = {}
    peak = 0
    for index, step in enumerate(steps):
        c, h, w = shapes[step.target]
        item = torch.empty((), dtype=store_dtype(step.target, steps, dtype)).element_size()
        live.setdefault(step.target, c * h * w * item)
        peak = max(peak, sum(live.values()))
        for name in [n for n in live if last.get(n, -1) == index]:
            del live[name]
    return peak
