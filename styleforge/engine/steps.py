"""One function per (layer kind × implementation) of the fused engine's plan, and what they share.

A step function `fn(ctx, step, flow) -> Flow` runs the layers of one `plan.Step`. `Flow` is what
passes between steps: the last convolution's raw output and its InstanceNorm still to apply —
pending (the consumer normalises: "raw"), as (scale, shift) the producer gathered, or as fp64
sums in a norm state — plus the current residual block's input. Every convolution reads its
input normalised, reflection-padded and upsampled by whoever writes it, so no pad or upsample
pass is materialised; a convolution followed by InstanceNorm runs without its bias (the mean
subtraction removes it exactly), only the head keeps one. `Context` holds the weights in the
layouts the kernels read, the zeroed norm states the graphs share, and the per-shape choice
between our 9×9 op and cuDNN (`pick`, from `engine.autotune`). The "reference" implementation is
plain PyTorch in any dtype: it checks the plan machinery on the CPU. Nothing here captures graphs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from .. import kernels
from .plan import Layer, Step

CHANNELS_LAST = torch.channels_last


@dataclass
class Flow:
    x: torch.Tensor                       # the last step's raw output (the input image before the first)
    norm: int | None = None               # the layer whose norm is still to apply to x
    scale: torch.Tensor | None = None     # that norm's affine, where the producer gathered it
    shift: torch.Tensor | None = None
    state: torch.Tensor | None = None     # or its sums, where the producer left them
    skip: torch.Tensor | None = None      # the current residual block's input,
    skip_pad: int = 0                     # reflection-padded by this much (cuDNN's input), or dense


def _skip(flow: Flow) -> torch.Tensor:
    p = flow.skip_pad
    return flow.skip[..., p:-p, p:-p] if p else flow.skip


class Context:
    """Weights, states and the 9×9 choice for one model on one device and dtype."""

    def __init__(self, layers: tuple[Layer, ...], device: torch.device, dtype: torch.dtype,
                 pick: Callable[..., torch.Tensor]):
        self.layers, self.device, self.dtype, self.pick = layers, device, dtype, pick
        low = dtype in (torch.float16, torch.bfloat16)
        self.conv = [layer.conv.weight.detach().to(device, dtype).contiguous(memory_format=CHANNELS_LAST)
                     for layer in layers]
        # fp32 affines: the ops read fp32, and fp32 keeps them exact.
        self.norms = [None if layer.norm is None else
                      (layer.norm.weight.detach().to(device, torch.float32).contiguous(),
                       layer.norm.bias.detach().to(device, torch.float32).contiguous()) for layer in layers]
        head = layers[-1].conv
        self.head_bias = head.bias.detach().to(device, dtype)
        self.head_bias32 = head.bias.detach().to(device, torch.float32)
        # The 9×9 op reads (Cout, Cin, 9, 9)-contiguous weights; the 3×3 op its packed layout (fp16/bf16).
        self.dense = {i: self.conv[i].contiguous() for i, layer in enumerate(layers) if layer.conv.kernel_size[0] == 9}
        self.packed = {i: kernels.pack_weight(self.conv[i]) for i, layer in enumerate(layers)
                       if low and layer.conv.kernel_size[0] == 3}
        self._packed9: dict[int, torch.Tensor] = {}
        self._states: dict[tuple, torch.Tensor] = {}

    def packed_9x9(self, i: int, pack) -> torch.Tensor:
        """Layer i's 9×9 weight in its kernel's shared-memory layout, made at first use (a warm-up
        call, outside any capture) and reused by the graphs."""
        if i not in self._packed9:
            self._packed9[i] = pack(self.dense[i])
        return self._packed9[i]

    def state(self, x: torch.Tensor, name: str, channels: int) -> torch.Tensor:
        """The zeroed norm state `name` at x's batch and device: made in the first (warm-up) call,
        outside any capture, then shared by the captured graphs, which replay one at a time on one
        stream and leave it zero. A normal tensor, not an inference one: the twins of the sums
        hand-off update it in place, inside the runner's inference mode or outside it."""
        key = (x.device, x.shape[0], name)
        if key not in self._states:
            with torch.inference_mode(False):
                self._states[key] = kernels.norm_state(x.shape[0], channels, x.device)
        return self._states[key]

    def chain_state(self, x: torch.Tensor, links: int) -> torch.Tensor:
        """conv3x3_residual_chain's state per (device, batch): zeroed once, left zero by every call."""
        key = (x.device, x.shape[0], "chain")
        if key not in self._states:
            self._states[key] = kernels.chain_state(x.shape[0], links, x.device)
        return self._states[key]

    def sum_states(self) -> list[torch.Tensor]:
        return [s for key, s in self._states.items() if key[2].startswith("sums-")]


def _one(ctx: Context, step: Step) -> tuple[int, Layer]:
    (i,) = step.layers
    return i, ctx.layers[i]


def _handed(ctx: Context, step: Step, i: int, y: torch.Tensor) -> Flow:
    """A raw output y of layer i, its norm gathered as (scale, shift) where the step hands it so."""
    if step.handoff != "scale_shift":
        return Flow(y, i)
    scale, shift = kernels.norm_scale_shift(y, *ctx.norms[i])
    return Flow(y, i, scale, shift)


# ---- the image layer (conv1): fp32 frame in ----------------------------------------------------

def _image_calls(ctx: Context, i: int, layer: Layer, x: torch.Tensor):
    p, args = layer.pad, (x, ctx.dense[i], None, False, None, None, layer.pad)

    def op():
        return torch.ops.styleforge.conv9x9(*args)

    def cudnn():   # pad before cast: two kernels (the other order was five)
        y = F.pad(x, (p, p, p, p), mode="reflect").to(ctx.dtype, memory_format=CHANNELS_LAST)
        return F.conv2d(y, ctx.conv[i])

    return args, op, cudnn


def image_auto(ctx: Context, step: Step, flow: Flow) -> Flow:
    i, layer = _one(ctx, step)
    args, op, cudnn = _image_calls(ctx, i, layer, flow.x)
    return _handed(ctx, step, i, ctx.pick(layer.name, flow.x, args, op, cudnn))


def image_cudnn(ctx: Context, step: Step, flow: Flow) -> Flow:
    i, layer = _one(ctx, step)
    return _handed(ctx, step, i, _image_calls(ctx, i, layer, flow.x)[2]())


def image_conv9x9(ctx: Context, step: Step, flow: Flow) -> Flow:
    i, layer = _one(ctx, step)
    return _handed(ctx, step, i, _image_calls(ctx, i, layer, flow.x)[1]())


def image_conv9x9_norm(ctx: Context, step: Step, flow: Flow) -> Flow:
    """The op gathers the norm's sums in its epilogue (no moments pass) for the next layer."""
    i, layer = _one(ctx, step)
    state = ctx.state(flow.x, f"sums-{layer.name}", layer.channels)
    weight, bias = ctx.norms[i]
    y, _, _ = kernels.conv9x9_norm(flow.x, ctx.dense[i], pad=layer.pad, norm_weight=weight, norm_bias=bias,
                                   state=state, affine=False,
                                   packed_weight=ctx.packed_9x9(i, kernels.pack_conv1_weight))
    return Flow(y, i, state=state)


# ---- 3×3 convolutions ---------------------------------------------------------------------------

def conv_cudnn(ctx: Context, step: Step, flow: Flow) -> Flow:
    """The InstanceNorm op writes the previous norm (+ skip, ReLU) upsampled and padded; cuDNN reads it."""
    i, layer = _one(ctx, step)
    prev = ctx.layers[flow.norm]
    weight, bias = ctx.norms[flow.norm]
    y = kernels.instance_norm(flow.x, weight, bias, residual=_skip(flow) if prev.skip else None, relu=prev.relu,
                              pad=layer.pad, upsample=layer.upsample)
    skip, skip_pad = (y, layer.pad) if layer.block_start else (flow.skip, flow.skip_pad)
    return Flow(F.conv2d(y, ctx.conv[i], None, layer.stride), i, skip=skip, skip_pad=skip_pad)


def conv_conv3x3(ctx: Context, step: Step, flow: Flow) -> Flow:
    """conv3x3_norm: the previous norm applied in the prologue — from its sums, its (scale, shift), or
    (after cuDNN) a norm_scale_shift pass here — and this layer's gathered in the epilogue."""
    i, layer = _one(ctx, step)
    prev = ctx.layers[flow.norm]
    in_weight, in_bias = ctx.norms[flow.norm]
    scale, shift, source = flow.scale, flow.shift, {}
    if flow.state is not None:
        source = {"in_state": flow.state, "in_norm_weight": in_weight, "in_norm_bias": in_bias}
    elif scale is None:   # raw from cuDNN
        scale, shift = kernels.norm_scale_shift(flow.x, in_weight, in_bias)
    residual = _skip(flow) if prev.skip else None
    if residual is not None and flow.skip_pad:   # a padded tensor's interior: the op reads it dense
        residual = residual.contiguous(memory_format=CHANNELS_LAST)
    weight, bias = ctx.norms[i]
    out = {"norm_weight": weight, "norm_bias": bias}
    state = None
    if step.handoff == "sums":
        state = ctx.state(flow.x, f"sums-{layer.name}", layer.channels)
        out |= {"state": state, "affine": False}
    h, scale, shift, _ = kernels.conv3x3_norm(flow.x, ctx.packed[i], scale, shift, residual=residual,
                                              relu=prev.relu, upsample=layer.upsample, stride=layer.stride,
                                              **source, **out)
    if state is not None:
        return Flow(h, i, state=state)
    return Flow(h, i, scale, shift)


def _blocks(ctx: Context, step: Step, flow: Flow, chain: bool) -> Flow:
    """The residual blocks as one conv3x3_residual_chain: each norm applied in the next
    convolution's prologue; chain: one persistent kernel where the plane fits the GPU at once, else
    separate conv3x3_norm calls (which overlap on small planes). The last norm leaves as sums."""
    if flow.state is None:
        raise ValueError("blocks: the chain takes its input norm as sums (a 'sums' hand-off before it)")
    last = ctx.layers[step.layers[-1]]
    out_state = ctx.state(flow.x, f"sums-{last.name}", last.channels)
    in_weight, in_bias = ctx.norms[flow.norm]
    h, _, _, block_in = kernels.conv3x3_residual_chain(
        flow.x, None, None, [ctx.packed[i] for i in step.layers], [ctx.norms[i][0] for i in step.layers],
        [ctx.norms[i][1] for i in step.layers], state=ctx.chain_state(flow.x, len(step.layers)), chain=chain,
        out_state=out_state, in_state=flow.state, in_norm_weight=in_weight, in_norm_bias=in_bias)
    return Flow(h, step.layers[-1], state=out_state, skip=block_in)


def blocks_chain(ctx: Context, step: Step, flow: Flow) -> Flow:
    return _blocks(ctx, step, flow, chain=True)


def blocks_links(ctx: Context, step: Step, flow: Flow) -> Flow:
    return _blocks(ctx, step, flow, chain=False)


# ---- the head (deconv3): IN + ReLU + pad + 9×9 convolution → float32 ----------------------------

def _head_calls(ctx: Context, i: int, layer: Layer, flow: Flow):
    h, p = flow.x, layer.pad
    weight, bias = ctx.norms[flow.norm]
    args = (h, ctx.dense[i], ctx.head_bias32, True, None, None, p)

    def op():   # the norm applied on load, from (scale, shift) gathered before or here
        s, t = (flow.scale, flow.shift) if flow.scale is not None else kernels.norm_scale_shift(h, weight, bias)
        return torch.ops.styleforge.conv9x9(h, ctx.dense[i], ctx.head_bias32, True, s, t, p)

    def cudnn():
        y = kernels.instance_norm(h, weight, bias, relu=True, pad=p)
        return F.conv2d(y, ctx.conv[i], ctx.head_bias).float()

    return args, op, cudnn


def head_auto(ctx: Context, step: Step, flow: Flow) -> Flow:
    i, layer = _one(ctx, step)
    args, op, cudnn = _head_calls(ctx, i, layer, flow)
    return Flow(ctx.pick(layer.name, flow.x, args, op, cudnn))


def head_cudnn(ctx: Context, step: Step, flow: Flow) -> Flow:
    i, layer = _one(ctx, step)
    return Flow(_head_calls(ctx, i, layer, flow)[2]())


def head_conv9x9(ctx: Context, step: Step, flow: Flow) -> Flow:
    i, layer = _one(ctx, step)
    return Flow(_head_calls(ctx, i, layer, flow)[1]())


def head_conv9x9_sums(ctx: Context, step: Step, flow: Flow) -> Flow:
    i, layer = _one(ctx, step)
    weight, bias = ctx.norms[flow.norm]
    return Flow(kernels.conv9x9_from_sums(flow.x, ctx.dense[i], ctx.head_bias32, flow.state, out_float32=True,
                                          pad=layer.pad, norm_weight=weight, norm_bias=bias,
                                          packed_weight=ctx.packed_9x9(i, kernels.pack_head_weight)))


# ---- plain PyTorch, any dtype: the plan's own check ---------------------------------------------

def reference(ctx: Context, step: Step, flow: Flow) -> Flow:
    """One layer as the modules compute it (norm, + skip, ReLU, upsample, pad, convolution), but
    without the bias a norm cancels: what every other implementation must equal."""
    i, layer = _one(ctx, step)
    x, skip = flow.x.to(ctx.dtype), flow.skip
    if flow.norm is not None:
        prev = ctx.layers[flow.norm]
        x = F.instance_norm(x, weight=prev.norm.weight.to(x), bias=prev.norm.bias.to(x), eps=prev.norm.eps)
        x = x + skip if prev.skip else x
        x = F.relu(x) if prev.relu else x
    if layer.block_start:
        skip = x
    if layer.upsample > 1:
        x = F.interpolate(x, mode="nearest", scale_factor=layer.upsample)
    x = F.pad(x, (layer.pad,) * 4, mode="reflect")
    bias = layer.conv.bias.to(x) if layer.norm is None else None
    y = F.conv2d(x, layer.conv.weight.to(x), bias, layer.stride)
    return Flow(y.float(), None) if layer.role == "head" else Flow(y, i, skip=skip)


IMPLS: dict[tuple[str, str], Callable[[Context, Step, Flow], Flow]] = {
    ("image", "auto"): image_auto, ("image", "cudnn"): image_cudnn, ("image", "conv9x9"): image_conv9x9,
    ("image", "conv9x9_norm"): image_conv9x9_norm, ("image", "reference"): reference,
    ("conv", "cudnn"): conv_cudnn, ("conv", "conv3x3"): conv_conv3x3, ("conv", "reference"): reference,
    ("blocks", "chain"): blocks_chain, ("blocks", "links"): blocks_links,
    ("head", "auto"): head_auto, ("head", "cudnn"): head_cudnn, ("head", "conv9x9"): head_conv9x9,
    ("head", "conv9x9_sums"): head_conv9x9_sums, ("head", "reference"): reference,
}


def run_steps(ctx: Context, steps: list[Step], x: torch.Tensor) -> torch.Tensor:
    """The frame x (fp32) through the steps; the head's output (float32)."""
    flow = Flow(x)
    for step in steps:
        flow = IMPLS[(step.kind, step.impl)](ctx, step, flow)
    return flow.x
