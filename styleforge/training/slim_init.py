"""Warm start for a slim network: the teacher's own channels, chosen, sliced and refit.

`slim_from_full(full, photos, width)` builds a `TransformerNet(width)` from a trained full one
(width 32) by structured channel selection, so that distillation starts near the teacher instead
of at random (docs/cpu.md "Slim network"). Not here: training, or pruning a network in place.

Channel groups, from the layout of models/transformer_net.py (each named by its producer):
  conv1 → in1 → conv2;  conv2 → in2 → conv3;  resK.conv1 → resK.in1 → resK.conv2;
  deconv1 → in4 → deconv2;  deconv2 → in5 → deconv3;  and one "stream" group for the residual
  stream: conv3/in3 write it, every block's conv2/in2 adds to it (the skip connection), every
  block's conv1 and deconv1 read it, so all of them keep the same set. deconv3 keeps its 3 outputs.

Which channels: a channel's importance is its mean |activation| on the photos (after the norm and
the ReLU: what the next conv actually reads) × the L2 norm of the next conv's input weights for
it, the size of what it feeds forward. The stream's sums that over its six readers (the five
blocks' conv1 and deconv1), each at the point of the stream it reads. The largest `width`,
`2·width` or `4·width` of each group are kept, in the teacher's order.

Instance norm is why slicing alone already gets close: a kept channel's statistics are its own,
so dropping its neighbours in the same layer leaves it unchanged; only the next conv loses the
dropped inputs' contributions. `refit=True` repairs that: walking the slim and the full network
side by side on the photos, every conv whose inputs lost channels gets its kept weights and bias
refit by ridge least squares to the teacher's pre-norm output on the kept output channels (for
deconv3, the image), from the slim network's own inputs, so errors do not pile up layer by layer.
conv1 reads all three colours and is only sliced.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from ..models.transformer_net import NUM_RESIDUAL_BLOCKS, SLIM_WIDTH, TransformerNet

CALIBRATION_PHOTOS = 8         # photos the trainer hands over (evenly spaced over its content set)
POSITIONS_PER_PHOTO = 4096     # output positions per photo and layer in the least-squares fit
RIDGE = 1e-2                   # × the mean diagonal of XᵀX: damps overfitting to 8 photos, solves dead inputs

_BLOCKS = [f"res{k}" for k in range(1, NUM_RESIDUAL_BLOCKS + 1)]
# (conv, group of its outputs, group of its inputs); None = the image's 3 channels, all kept.
CONVS = [("conv1", "conv1", None), ("conv2", "conv2", "conv1"), ("conv3", "stream", "conv2"),
         *[c for b in _BLOCKS for c in ((f"{b}.conv1", b, "stream"), (f"{b}.conv2", "stream", b))],
         ("deconv1", "deconv1", "stream"), ("deconv2", "deconv2", "deconv1"), ("deconv3", None, "deconv2")]
NORMS = [("in1", "conv1"), ("in2", "conv2"), ("in3", "stream"),
         *[n for b in _BLOCKS for n in ((f"{b}.in1", b), (f"{b}.in2", "stream"))],
         ("in4", "deconv1"), ("in5", "deconv2")]
GROUP_SCALE = {"conv1": 1, "conv2": 2, "stream": 4, **{b: 4 for b in _BLOCKS}, "deconv1": 2, "deconv2": 1}


def _feeds(activation: torch.Tensor, reader: nn.Module) -> torch.Tensor:
    """(C,) mean |activation| × ‖reader's input weights‖ per channel."""
    weight = reader.conv2d.weight
    return activation.abs().mean(dim=(0, 2, 3)) * weight.pow(2).sum(dim=(0, 2, 3)).sqrt()


@torch.no_grad()
def importances(full: TransformerNet, photos: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per group, the importance of each of the full network's channels on `photos` (N,3,H,W, 0–255)."""
    out = {}
    y = full.relu(full.in1(full.conv1(photos)))
    out["conv1"] = _feeds(y, full.conv2)
    y = full.relu(full.in2(full.conv2(y)))
    out["conv2"] = _feeds(y, full.conv3)
    y = full.relu(full.in3(full.conv3(y)))
    stream = torch.zeros(y.shape[1], device=y.device)
    for name, block in zip(_BLOCKS, full.residual_blocks()):
        stream += _feeds(y, block.conv1)
        h = block.relu(block.in1(block.conv1(y)))
        out[name] = _feeds(h, block.conv2)
        y = block.in2(block.conv2(h)) + y
    out["stream"] = stream + _feeds(y, full.deconv1)
    y = full.relu(full.in4(full.deconv1(y)))
    out["deconv1"] = _feeds(y, full.deconv2)
    y = full.relu(full.in5(full.deconv2(y)))
    out["deconv2"] = _feeds(y, full.deconv3)
    return out


def select_channels(full: TransformerNet, photos: torch.Tensor, width: int = SLIM_WIDTH) -> dict[str, torch.Tensor]:
    """Per group, the indices of the kept channels (ascending)."""
    keep = {}
    for group, score in importances(full, photos).items():
        count = GROUP_SCALE[group] * width
        if count > len(score):
            raise ValueError(f"width {width} is wider than the teacher ({full.width}) in group {group}")
        keep[group] = score.topk(count).indices.sort().values
    return keep


def slice_state(full: TransformerNet, keep: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The full network's state dict cut down to the kept channels of every group."""
    state = full.state_dict()
    out = {}
    for conv, out_group, in_group in CONVS:
        weight, bias = state[f"{conv}.conv2d.weight"], state[f"{conv}.conv2d.bias"]
        if out_group is not None:
            weight, bias = weight[keep[out_group]], bias[keep[out_group]]
        if in_group is not None:
            weight = weight[:, keep[in_group]]
        out[f"{conv}.conv2d.weight"], out[f"{conv}.conv2d.bias"] = weight.clone(), bias.clone()
    for norm, group in NORMS:
        for param in ("weight", "bias"):
            out[f"{norm}.{param}"] = state[f"{norm}.{param}"][keep[group]].clone()
    return out


def _conv_input(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """What the layer's conv2d reads: x upsampled (UpsampleConvLayer) and reflection-padded."""
    if getattr(layer, "upsample", None):
        x = F.interpolate(x, mode="nearest", scale_factor=layer.upsample)
    return layer.reflection_pad(x)


@torch.no_grad()
def fit_conv(layer: nn.Module, x: torch.Tensor, target: torch.Tensor, ridge: float = RIDGE) -> None:
    """Ridge least squares of `layer`'s conv weights and bias so layer(x) ≈ target (N,C_out,h,w),
    on a regular grid of at most POSITIONS_PER_PHOTO output positions per photo."""
    conv = layer.conv2d
    k, stride = conv.kernel_size[0], conv.stride[0]
    step = max(1, math.ceil(math.sqrt(target.shape[-2] * target.shape[-1] / POSITIONS_PER_PHOTO)))
    features = conv.in_channels * k * k + 1                       # + the bias' column of ones
    gram = torch.zeros(features, features, dtype=torch.float64, device=x.device)
    cross = torch.zeros(features, conv.out_channels, dtype=torch.float64, device=x.device)
    for one, want in zip(_conv_input(layer, x), target):         # one photo at a time bounds memory
        patches = F.unfold(one[None], k, stride=stride * step)[0].T.double()   # (L, C_in·k·k)
        rows = torch.cat([patches, torch.ones_like(patches[:, :1])], dim=1)
        wanted = want[:, ::step, ::step].flatten(1).T.double()              # (L, C_out)
        gram += rows.T @ rows
        cross += rows.T @ wanted
    damping = ridge * gram.diagonal().mean().clamp_min(1e-12)
    solution = torch.linalg.solve(gram + damping * torch.eye(features, dtype=gram.dtype, device=gram.device), cross)
    conv.weight.copy_(solution[:-1].T.reshape(conv.weight.shape).to(conv.weight.dtype))
    conv.bias.copy_(solution[-1].to(conv.bias.dtype))


@torch.no_grad()
def refit(slim: TransformerNet, full: TransformerNet, keep: dict[str, torch.Tensor], photos: torch.Tensor,
          ridge: float = RIDGE) -> None:
    """Refit every slim conv after conv1, in network order, on the slim network's own inputs."""
    def matched(s_layer, t_layer, s, t, group):
        t_out = t_layer(t)
        fit_conv(s_layer, s, t_out if group is None else t_out[:, keep[group]], ridge)
        return s_layer(s), t_out

    s, t = slim.relu(slim.in1(slim.conv1(photos))), full.relu(full.in1(full.conv1(photos)))
    s, t = matched(slim.conv2, full.conv2, s, t, "conv2")
    s, t = slim.relu(slim.in2(s)), full.relu(full.in2(t))
    s, t = matched(slim.conv3, full.conv3, s, t, "stream")
    s, t = slim.relu(slim.in3(s)), full.relu(full.in3(t))
    for name, sb, tb in zip(_BLOCKS, slim.residual_blocks(), full.residual_blocks()):
        hs, ht = matched(sb.conv1, tb.conv1, s, t, name)
        hs, ht = sb.relu(sb.in1(hs)), tb.relu(tb.in1(ht))
        hs, ht = matched(sb.conv2, tb.conv2, hs, ht, "stream")
        s, t = sb.in2(hs) + s, tb.in2(ht) + t
    s, t = matched(slim.deconv1, full.deconv1, s, t, "deconv1")
    s, t = slim.relu(slim.in4(s)), full.relu(full.in4(t))
    s, t = matched(slim.deconv2, full.deconv2, s, t, "deconv2")
    s, t = slim.relu(slim.in5(s)), full.relu(full.in5(t))
    matched(slim.deconv3, full.deconv3, s, t, None)


@torch.no_grad()
def slim_from_full(full: TransformerNet, photos: torch.Tensor, width: int = SLIM_WIDTH,
                   refit_convs: bool = True, ridge: float = RIDGE) -> TransformerNet:
    """A TransformerNet(width) from `full`'s channels, chosen and (refit_convs) refit on `photos`
    (N,3,H,W float 0–255, H and W multiples of 4: training photos, not the held-out ones). fp32, on
    `full`'s device; `full` is left unchanged."""
    if next(full.parameters()).dtype != torch.float32:
        full = copy.deepcopy(full).float()
    photos = photos.to(next(full.parameters()).device, torch.float32)
    keep = select_channels(full, photos, width)
    slim = TransformerNet(width).to(photos.device)
    slim.load_state_dict(slice_state(full, keep), strict=True)
    if refit_convs:
        refit(slim, full, keep, photos, ridge)
    return slim


def calibration_photos(content: torch.Tensor, count: int = CALIBRATION_PHOTOS) -> torch.Tensor:
    """`count` photos evenly spaced over a content set (N,3,S,S uint8), as float 0–255."""
    index = torch.linspace(0, len(content) - 1, min(count, len(content))).round().long()
    return content[index.to(content.device)].float()
