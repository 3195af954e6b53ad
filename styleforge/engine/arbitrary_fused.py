"""The arbitrary-style model's fused forward: the same network as `ArbitraryStyleNet.stylize`,
with everything between two convolutions in one pass over memory.

The plain model pays, per convolution, a reflection pad, a ReLU, a bias add and often a pool or
upsample as separate kernels, and per transfer level a dozen fp32 normalisation kernels on
channels_last tensors: at the default stroke scale (the model at 512 px) that glue took most
of a pass, far more than the convolutions. Here:

- every 3×3 convolution is cuDNN's with no padding, reading a buffer that `feature_pad` wrote
  already padded by reflection, with the previous layer's bias, ReLU, max-pool or ×2 upsample
  (and the merge's skip) applied on the way; the same pass keeps the level features the transfer
  reads and their 2×2 average (the shallower level's keys);
- the ImageNet normalisation is folded into conv1_1's weights (1/σ; the mean is subtracted
  before the pad) and the output's de-normalisation into the last conv's;
- each transfer level's key normalisations are folded into its query projection (per sample:
  W·diag(scale), b + W·shift, from `norm_affine`), so the normalised keys are never written;
  the projection is one GEMM per key part over the real query columns only (bias in the GEMM's
  epilogue), then ONE write of q zero-padded per head in the (B, H, N, D) layout the attention
  kernel reads, so the kernel's entry makes no copy of it;
- AdaAttN's mean/std and the FFN's LayerNorm come out of one `adaattn_stats` pass, the FFN is
  `styleforge::ffn`, the attention `styleforge::attention`.

The ops dispatch by themselves, so on the CPU (or in fp64) this is the same forward on the
twins: `tests/engine/test_arbitrary_fused.py` checks it against `ArbitraryStyleNet.stylize` in
float64. Weights come from the fp32 model once (`FusedArbitraryNet(model, device, dtype)`); style
codes come from the model's `encode_style`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..kernels import adaattn_stats, attention, feature_pad, ffn, norm_affine
from ..models.arbitrary import ArbitraryStyleNet, StyleCode
from ..models.arbitrary.config import LEVEL_ENDS
from ..models.arbitrary.decoder import Upsample
from ..models.arbitrary.model import pad_to_multiple, style_shares
from ..models.arbitrary.transfer import EPS

CL = torch.channels_last


@dataclass
class ConvStep:
    weight: torch.Tensor          # (Cout, Cin, 3, 3), channels_last, run dtype
    bias: torch.Tensor            # (Cout,) fp32: added by the next feature_pad (or the conv: last)
    relu: bool = True
    resample: int = 0             # what the next feature_pad does after the activation
    level: str | None = None      # the VGG level this conv's activation is


@dataclass
class LevelWeights:
    q_weight: torch.Tensor        # (H·qk, Ck) fp32: only the real rows (no per-head zero padding)
    q_bias: torch.Tensor          # (H·qk,) fp32
    ln_weight: torch.Tensor       # (C,) fp32
    ln_bias: torch.Tensor
    ln_eps: float
    fc1: tuple[torch.Tensor, torch.Tensor]   # run dtype
    fc2: tuple[torch.Tensor, torch.Tensor]
    heads: int
    qk_dim: int
    head_dim: int


def project(tokens: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
            accumulate: torch.Tensor | None = None) -> torch.Tensor:
    """tokens (B, N, K) @ weight (B, M, K)ᵀ per sample, (B, N, M): + bias (B, M), or added into
    `accumulate` in place. For one sample, `addmm` with a 1-D bias, which cuBLASLt adds in the
    GEMM's epilogue (`baddbmm` would first copy the broadcast bias into the whole output, then
    read it back)."""
    if tokens.shape[0] == 1:
        flat = accumulate[0] if accumulate is not None else None
        if flat is not None:
            flat.addmm_(tokens[0], weight[0].t())
            return accumulate
        return torch.addmm(bias[0], tokens[0], weight[0].t()).unsqueeze(0)
    if accumulate is not None:
        return accumulate.baddbmm_(tokens, weight.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(1), tokens, weight.transpose(1, 2))


def heads_padded(x: torch.Tensor, dim: int) -> torch.Tensor:
    """(B, H, N, d) any strides → (B, H, N, dim) contiguous, zeros past d: written in one pass, in
    the layout the attention kernel reads (it copies any other layout first)."""
    d = x.shape[-1]
    if d == dim:
        return x.contiguous()
    zeros = x.new_zeros(()).expand(*x.shape[:-1], dim - d)
    return torch.cat([x, zeros], dim=-1).contiguous()


class FusedArbitraryNet:
    """`stylize(content, styles, alpha)` as `ArbitraryStyleNet.stylize`, on the glue ops."""

    def __init__(self, model: ArbitraryStyleNet, device: torch.device | str, dtype: torch.dtype):
        self.device, self.dtype = torch.device(device), dtype
        self.levels = model.config.levels
        self.multiple = model.config.multiple
        wd = torch.float64 if dtype == torch.float64 else torch.float32
        self.wide = wd
        enc = model.encoder
        std = enc.std.detach().to(self.device, wd).view(-1)
        self.input_mean = enc.mean.detach().to(self.device, wd).view(1, 3, 1, 1)
        self.encoder = self._encoder_steps(enc, std)
        self.above = {ArbitraryStyleNet._above(level) for level in self.levels}
        self.level_weights = {level: self._level(model.transfer[level]) for level in self.levels}
        self.merge = {level: (self._w(conv.weight.view(conv.weight.shape[:2])), self._v(conv.bias))
                      for level, conv in model.merge.items()}
        self.decoder = self._decoder_steps(model.decoder, std, self.input_mean.view(-1))

    # -- weights ------------------------------------------------------------------------------
    def _w(self, t: torch.Tensor) -> torch.Tensor:
        t = t.detach().to(self.device, self.wide).to(self.dtype)
        return t.contiguous(memory_format=CL) if t.dim() == 4 else t.contiguous()

    def _v(self, t: torch.Tensor) -> torch.Tensor:
        return t.detach().to(self.device, self.wide).contiguous()

    def _encoder_steps(self, enc, std: torch.Tensor) -> list[ConvStep]:
        stop = LEVEL_ENDS[self.levels[-1]]
        layers = list(enc.features[:stop])
        steps: list[ConvStep] = []
        for i, layer in enumerate(layers):
            if not isinstance(layer, nn.Conv2d):
                continue
            weight = layer.weight.detach().to(self.device, self.wide)
            if not steps:      # (x − mean)/std: 1/std here, the mean before the pad
                weight = weight / std.view(1, 3, 1, 1)
            pool = i + 2 < len(layers) and isinstance(layers[i + 2], nn.MaxPool2d)
            level = next((name for name, end in LEVEL_ENDS.items() if end == i + 2), None)
            steps.append(ConvStep(self._w(weight), self._v(layer.bias), True, 1 if pool else 0, level))
        return steps

    def _decoder_steps(self, decoder: nn.Sequential, std: torch.Tensor, mean: torch.Tensor) -> list[ConvStep]:
        modules = list(decoder)
        steps: list[ConvStep] = []
        for i, module in enumerate(modules):
            if isinstance(module, Upsample):
                continue
            conv, relu = module[0], len(module) > 1
            up = i + 1 < len(modules) and isinstance(modules[i + 1], Upsample)
            weight, bias = conv.weight.detach().to(self.device, self.wide), self._v(conv.bias)
            steps.append(ConvStep(weight, bias, relu, 2 if up else 0))
        last = steps[-1]   # y·std + mean folded into the image head
        last.weight = last.weight * std.view(3, 1, 1, 1)
        last.bias = last.bias * std + mean
        for step in steps:
            step.weight = self._w(step.weight)
        return steps

    def _level(self, block) -> LevelWeights:
        heads, qk, hd = block.heads, block.qk_dim, block.head_dim
        return LevelWeights(self._v(block.q_proj.weight), self._v(block.q_proj.bias), self._v(block.norm.weight),
                            self._v(block.norm.bias), block.norm.eps,
                            (self._w(block.fc1.weight), self._w(block.fc1.bias)),
                            (self._w(block.fc2.weight), self._w(block.fc2.bias)),
                            heads, qk, hd)

    # -- forward ------------------------------------------------------------------------------
    def encode(self, x: torch.Tensor) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """x (B, 3, H, W) 0–255, sides multiples of 16 → (level features, their 2×2 averages)."""
        # The mean subtracted before the rounding to the run dtype (0–255 in bf16 is a step of 1).
        centred = (x.to(self.wide) - self.input_mean).to(self.dtype, memory_format=CL)   # one copy: cast + layout
        p = F.pad(centred, (1, 1, 1, 1), mode="reflect")
        feats, pooled = {}, {}
        for k, step in enumerate(self.encoder):
            c = F.conv2d(p, step.weight)
            if k == len(self.encoder) - 1:
                feats[step.level] = feature_pad(c, step.bias, relu=True, pad=0)[0]
                break
            keep = step.level in self.levels
            pool = step.level in self.above
            p, kept, avg = feature_pad(c, step.bias, relu=True, resample=step.resample, pad=1, keep=keep, pool=pool)
            if keep:
                feats[step.level] = kept
            if pool:
                pooled[step.level] = avg
        return feats, pooled

    def _query(self, lw: LevelWeights, fc: torch.Tensor, above: torch.Tensor):
        """The query projection of [norm(fc), norm(above)] with the norms folded into it, as the
        attention reads it: (B, H, N, D) contiguous, zero past qk_dim in each head; and fc's
        normalisation (scale, shift), which the block reuses."""
        b, c = fc.shape[:2]
        scale_c, shift_c = norm_affine(fc, EPS)
        scale_a, shift_a = norm_affine(above, EPS)
        scale = torch.cat([scale_c, scale_a], dim=1).to(self.wide)          # (B, Ck)
        shift = torch.cat([shift_c, shift_a], dim=1).to(self.wide)
        weight = (lw.q_weight.unsqueeze(0) * scale.unsqueeze(1)).to(self.dtype)   # (B, H·qk, Ck)
        bias = (lw.q_bias + shift @ lw.q_weight.t()).to(self.dtype)              # (B, H·qk)
        tok_c = fc.permute(0, 2, 3, 1).reshape(b, -1, c)      # channels_last: views, no copies
        tok_a = above.permute(0, 2, 3, 1).reshape(b, -1, above.shape[1])
        q = project(tok_c, weight[:, :, :c], bias)
        q = project(tok_a, weight[:, :, c:], accumulate=q)
        n = tok_c.shape[1]
        q = q.view(b, n, lw.heads, lw.qk_dim).transpose(1, 2)                   # (B, H, N, qk) view
        return heads_padded(q, lw.head_dim), (scale_c, shift_c)

    def _block(self, lw: LevelWeights, fc: torch.Tensor, q: torch.Tensor, affine, code) -> torch.Tensor:
        """One AdaAttN block on one painting's code: tokens (B, N, C)."""
        b = fc.shape[0]
        o = attention(q, code.k.to(q.dtype), code.v.to(q.dtype), None, lw.qk_dim ** -0.5)
        s_mean = code.mean.expand(b, -1, -1).reshape(b, -1).to(self.wide).contiguous()
        s_std = code.std.expand(b, -1, -1).reshape(b, -1).to(self.wide).contiguous()
        y, y_ln = adaattn_stats(o.contiguous(), fc, affine[0], affine[1], s_mean, s_std, lw.ln_weight, lw.ln_bias,
                                EPS, lw.ln_eps)
        (w1, b1), (w2, b2) = lw.fc1, lw.fc2
        return ffn(y_ln, w1, b1, w2, b2, residual=y, gelu="tanh")

    def transfer(self, feats, pooled, styles: list[tuple[StyleCode, float]], alpha: float) -> dict:
        shares = style_shares([w for _, w in styles])
        out = {}
        for level in self.levels:
            lw, fc = self.level_weights[level], feats[level]
            q, affine = self._query(lw, fc, pooled[ArbitraryStyleNet._above(level)])
            mixed = None
            for (code, _), share in zip(styles, shares):
                t = self._block(lw, fc, q, affine, code[level])
                t = t if share == 1.0 else t * share
                mixed = t if mixed is None else mixed + t
            b, c, h, wdt = fc.shape
            if alpha < 1.0:
                mixed = torch.lerp(fc.permute(0, 2, 3, 1).reshape(b, -1, c).to(mixed.dtype), mixed, alpha)
            out[level] = mixed.view(b, h, wdt, c).permute(0, 3, 1, 2)      # channels_last view
        return out

    def decode(self, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        x = feats[self.levels[-1]]
        if len(self.levels) == 1:     # no merge: the decoder's first conv reads x padded
            x = feature_pad(x.contiguous(memory_format=CL), pad=1)[0]
        for i, level in enumerate(reversed(self.levels[:-1])):
            weight, bias = self.merge[level]
            b, c, h, w = x.shape
            m = (x.permute(0, 2, 3, 1).reshape(b, -1, c) @ weight.t()).view(b, h, w, -1).permute(0, 3, 1, 2)
            skip = feats[level].contiguous(memory_format=CL)
            last = i == len(self.levels) - 2
            x = feature_pad(m.contiguous(memory_format=CL), bias, skip, resample=2, pad=1 if last else 0)[0]
        p, steps = x, self.decoder
        for k, step in enumerate(steps):
            if k == len(steps) - 1:   # the bias (≈ the ImageNet mean, 0–255) added in fp32
                return F.conv2d(p, step.weight).to(self.wide) + step.bias.view(1, -1, 1, 1)
            c = F.conv2d(p, step.weight)
            p = feature_pad(c, step.bias, relu=step.relu, resample=step.resample, pad=1)[0]
        raise AssertionError("the decoder has no convolution")

    def stylize(self, content: torch.Tensor, styles: list[tuple[StyleCode, float]], alpha: float = 1.0) -> torch.Tensor:
        """content (B, 3, H, W) 0–255, any float dtype (float32 keeps the input unrounded until
        the mean is off), any H, W → (B, 3, H, W) 0–255 clamped, float32 (float64 for a float64 run)."""
        h, w = content.shape[-2:]
        x = pad_to_multiple(content, self.multiple)
        feats, pooled = self.encode(x)
        out = self.decode(self.transfer(feats, pooled, styles, alpha))
        return out[..., :h, :w].clamp(0, 255)
