"""Rescale each convolution that feeds an instance norm so its output channels share one range.

INT8 quantizes a convolution's output with one scale per tensor (OpenVINO/NNCF quantize
activations per tensor). Ahead of an instance norm that output is not the signal: the norm
subtracts each channel's mean and divides by its spread, so a channel whose spread is small
against the tensor's range (or which sits far from zero) keeps only a few of the 256 levels, and
the norm then magnifies that rounding back to unit spread. Pale, low-contrast styles lean on such
channels; their INT8 output lost 30 % and more of the style ratio (docs/cpu.md).

An instance norm is blind to a per-channel scale and offset of its input, so for conv `W, b`
followed by a norm, `W' = W / s`, `b' = (b - m) / s` (per output channel; `m` and `s` the channel's
mean and spread, averaged over calibration images) leaves the norm's output the same (but for its `eps`, below) and
centres every channel at zero with unit spread, so the per-tensor scale fits them all. The norm's
weight absorbs the change in `eps`'s share at the calibration variance (exact where a channel's
variance is far from `eps`, close where it is not).

Not here: the quantization itself (`engine.openvino_runner`). Applies to `TransformerNet` (full
or slim); returns a changed copy, never touches the model it is given.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ..models.transformer_net import NUM_RESIDUAL_BLOCKS

# (conv, the instance norm reading its output), by module name.
PAIRS = [("conv1.conv2d", "in1"), ("conv2.conv2d", "in2"), ("conv3.conv2d", "in3"),
         *[(f"res{i}.conv{j}.conv2d", f"res{i}.in{j}")
           for i in range(1, NUM_RESIDUAL_BLOCKS + 1) for j in (1, 2)],
         ("deconv1.conv2d", "in4"), ("deconv2.conv2d", "in5")]
MIN_SPREAD = 1e-6   # a dead channel (constant output) keeps its scale: the norm zeroes it anyway


@torch.no_grad()
def channel_stats(model: nn.Module, images: list[torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per norm: (mean, spread) of each input channel, averaged over `images` ((1, 3, H, W), 0–255):
    the mean of the per-image channel means and the root of the mean per-image variance."""
    modules = dict(model.named_modules())
    sums: dict[str, list[torch.Tensor]] = {}

    def hook(name):
        def record(_module, inputs, _output):
            x = inputs[0].double()                            # (N, C, H, W)
            mean = x.mean(dim=(2, 3)).sum(0)                   # (C,)
            var = x.var(dim=(2, 3), unbiased=False).sum(0)     # (C,)
            acc = sums.setdefault(name, [torch.zeros_like(mean), torch.zeros_like(var), 0])
            acc[0] += mean
            acc[1] += var
            acc[2] += x.shape[0]
        return record

    handles = [modules[norm].register_forward_hook(hook(norm)) for _, norm in PAIRS]
    try:
        for image in images:
            model(torch.as_tensor(image, dtype=torch.float32))
    finally:
        for handle in handles:
            handle.remove()
    return {name: (m / n, (v / n).sqrt()) for name, (m, v, n) in sums.items()}


@torch.no_grad()
def equalize(model: nn.Module, images: list[torch.Tensor]) -> nn.Module:
    """A float32 copy of `model` whose norm inputs are centred with unit spread (module docstring)."""
    out = copy.deepcopy(model).float().eval()
    stats = channel_stats(out, images)
    modules = dict(out.named_modules())
    for conv_name, norm_name in PAIRS:
        conv = modules[conv_name]
        mean, spread = stats[norm_name]
        scale = torch.where(spread > MIN_SPREAD, spread, torch.ones_like(spread)).float()
        conv.weight.div_(scale.view(-1, 1, 1, 1))
        conv.bias.sub_(mean.float()).div_(scale)
        # The norm divides by sqrt(var + eps); var shrank by scale², eps did not: its weight takes
        # the difference at the calibration's variance, so a channel eps used to damp stays damped.
        norm = modules[norm_name]
        var = spread.double() ** 2
        norm.weight.mul_(((var + norm.eps * scale.double() ** 2) / (var + norm.eps)).sqrt().float())
    return out
