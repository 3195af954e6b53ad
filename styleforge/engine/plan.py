"""The fused engine's plan as data: the network's layers, read off the model, and the steps that run them.

`describe(model)` walks a `TransformerNet`'s modules in order (never a second copy of the network)
into `Layer`s: one per convolution, with the InstanceNorm, ReLU, upsample, reflection pad and
residual skip around it. The rules are the blocks' own (models/blocks.py, pytorch/examples'
forward): a top-level norm is followed by ReLU; a residual block is conv-IN-ReLU, conv-IN, + its
input. `build_steps(layers, variant, choices)` turns the layers into `Step`s: which function
(kind × implementation, `engine.steps`) runs which layers, and how each step hands its output's
norm to the next ("raw": the consumer normalises; "scale_shift": the producer gathered the norm's
affine; "sums": the producer left fp64 sums in a norm state). Another model (the arbitrary-style
network) needs its own `describe` and step kinds, not another runner. This module runs nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from torch import nn

from ..models.blocks import ConvLayer, ResidualBlock, UpsampleConvLayer

# The residual blocks and the decoder's 3×3 convolutions: cuDNN with standalone norms ("cudnn"),
# the conv3x3_norm ops with the sums hand-off, the blocks as one persistent chain ("conv3x3") or
# as ten calls ("conv3x3_links"), cuDNN blocks with a fused decoder ("hybrid"); "reference": every
# layer in plain PyTorch, any dtype (the plan machinery's CPU check).
VARIANTS = ("cudnn", "conv3x3", "conv3x3_links", "hybrid", "reference")


@dataclass(frozen=True)
class Layer:
    name: str                       # the module path: "conv1", "res3.conv2", "deconv3"
    role: str                       # "image" (reads the frame), "conv", "block" (in a residual block), "head"
    conv: nn.Conv2d
    pad: int                        # reflection pad before the convolution
    upsample: int = 1               # nearest ×upsample before the pad
    norm: nn.InstanceNorm2d | None = None
    relu: bool = False              # after the norm
    block_start: bool = False       # its input is a residual block's input (the skip)
    skip: bool = False              # the block's input is added after its norm

    @property
    def stride(self) -> int:
        return self.conv.stride[0]

    @property
    def channels(self) -> int:
        return self.conv.out_channels


@dataclass(frozen=True)
class Step:
    kind: str                       # "image", "conv", "blocks", "head": the layer kind
    impl: str                       # the implementation (`steps.IMPLS[(kind, impl)]`)
    layers: tuple[int, ...]         # indices into the description
    handoff: str = "raw"            # how this step's output norm reaches the next step


def _layer(name: str, module: ConvLayer | UpsampleConvLayer, role: str, **kw) -> Layer:
    return Layer(name, role, module.conv2d, module.reflection_pad.padding[0],
                 getattr(module, "upsample", None) or 1, **kw)


def describe(model: nn.Module) -> tuple[Layer, ...]:
    """The layers of a `TransformerNet`, in forward order, from its registered modules."""
    layers: list[Layer] = []
    for name, module in model.named_children():
        if isinstance(module, (ConvLayer, UpsampleConvLayer)):
            layers.append(_layer(name, module, "image" if not layers else "conv"))
        elif isinstance(module, nn.InstanceNorm2d):
            layers[-1] = replace(layers[-1], norm=module, relu=True)   # conv-IN-ReLU
        elif isinstance(module, ResidualBlock):
            layers += [_layer(f"{name}.conv1", module.conv1, "block", norm=module.in1, relu=True, block_start=True),
                       _layer(f"{name}.conv2", module.conv2, "block", norm=module.in2, skip=True)]
        elif not isinstance(module, nn.ReLU):
            raise TypeError(f"describe: no rule for {name} ({type(module).__name__})")
    if layers and layers[-1].norm is None:
        layers[-1] = replace(layers[-1], role="head")
    return tuple(layers)


def build_steps(layers: tuple[Layer, ...], variant: str, choices: dict[str, str]) -> list[Step]:
    """The steps of `variant` (VARIANTS) for a shape whose 9×9 layers run as `choices[name]`:
    "conv9x9" (the op), "cudnn", or "auto" where not chosen yet (chosen in the step, outside capture)."""
    if variant not in VARIANTS:
        raise ValueError(f"build_steps: variant must be one of {VARIANTS}, got {variant!r}")
    image, head = layers[0], layers[-1]
    blocks = tuple(i for i, layer in enumerate(layers) if layer.role == "block")
    convs = [i for i, layer in enumerate(layers) if layer.role == "conv"]
    if variant == "reference":
        return [Step(layer.role if layer.role != "block" else "conv", "reference", (i,))
                for i, layer in enumerate(layers)]
    if variant in ("cudnn", "hybrid"):
        first = Step("image", choices.get(image.name, "auto"), (0,))
        before = [Step("conv", "cudnn", (i,)) for i in range(1, len(layers) - 1)
                  if variant == "cudnn" or i <= blocks[-1]]
        after = [] if variant == "cudnn" else [Step("conv", "conv3x3", (i,), "scale_shift")
                                               for i in convs if i > blocks[-1]]
        return [first, *before, *after, Step("head", choices.get(head.name, "auto"), (len(layers) - 1,))]
    # The fused variants: the sums hand-off between every two layers, except around a 9×9 layer on
    # cuDNN (or not chosen yet), whose neighbour takes its norm as (scale, shift).
    op_first, op_head = choices.get(image.name) == "conv9x9", choices.get(head.name) == "conv9x9"
    steps = [Step("image", "conv9x9_norm", (0,), "sums") if op_first
             else Step("image", choices.get(image.name, "auto"), (0,), "scale_shift")]
    for i in convs:
        if i > blocks[-1] and all(s.kind != "blocks" for s in steps):
            steps.append(Step("blocks", "chain" if variant == "conv3x3" else "links", blocks, "sums"))
        to_head_by_affine = i == convs[-1] and not op_head
        steps.append(Step("conv", "conv3x3", (i,), "scale_shift" if to_head_by_affine else "sums"))
    steps.append(Step("head", "conv9x9_sums" if op_head else choices.get(head.name, "auto"), (len(layers) - 1,)))
    return steps
