"""Exact tiled execution of the style network: any image size, bounded memory, no seams.

The network is run layer by layer. Each convolution reads its input in row bands with a halo of
exactly what its kernel needs (reflection padding only where a band touches the true image
border, so every output row is the one the whole-frame network computes) and writes its output
into a full-frame store (`engine.stores`: the GPU, host RAM or a scratch file). While it runs,
the per-channel moments of its output are gathered over all bands (each band's mean and M2 in
fp32, merged in float64 by Chan et al.'s parallel update), so every InstanceNorm normalizes with
the statistics of the whole image. The norm's affine and the ReLU are applied as the next layer
reads its bands; a residual block's identity add is one in-place pass over the residual stream.
The result equals the untiled network within the precision's rounding.

The steps come from the engine's one description of the network (`engine.plan.describe`, which
walks the `TransformerNet` modules): `tiling_plan.plan_steps` only adds where each layer's data
lives; nothing here re-declares the network. The approximate, faster thumbnail-statistics mode is
`engine.thumbnail`; the choice between modes and the memory estimates are `engine.memory`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .. import kernels
from ..models.transformer_net import TransformerNet
from .plan import describe
from .stores import TensorStore, make_store
from .tiling_plan import Step, last_reads, plan_steps, store_dtype, store_shapes, wide_dtype


class _Moments:
    """Per-channel count, mean and M2 of one activation, merged band by band in float64."""

    def __init__(self, channels: int, device: torch.device):
        self.count = 0
        self.mean = torch.zeros(channels, dtype=torch.float64, device=device)
        self.m2 = torch.zeros(channels, dtype=torch.float64, device=device)

    def add(self, band: torch.Tensor) -> None:
        n = band.shape[2] * band.shape[3]
        var, mean = torch.var_mean(band.to(wide_dtype(band.dtype)), dim=(0, 2, 3), correction=0)
        mean, m2 = mean.double(), var.double() * n
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * (n / total)
        self.m2 += m2 + delta * delta * (self.count * n / total)
        self.count = total

    def affine(self, weight: torch.Tensor, bias: torch.Tensor, eps: float,
               wide: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(scale, shift) in `wide` with norm(x) = x · scale + shift (weight, bias: float64). In
        fp32 it is formed as the fused ops form it from their sums (`take_affine`), so both round
        the same inputs alike."""
        var = (self.m2 / self.count).clamp_min(0.0)
        if wide == torch.float64:
            scale = weight / torch.sqrt(var + eps)
            shift = bias - self.mean * scale
        else:
            scale = weight.float() * torch.rsqrt(var.float() + eps)
            shift = bias.float() + (-self.mean.float() * scale)
        return scale.to(wide).view(1, -1, 1, 1), shift.to(wide).view(1, -1, 1, 1)


@dataclass
class _Pending:
    scale: torch.Tensor
    shift: torch.Tensor
    relu: bool


def reflect_pad(band: torch.Tensor, side: int, top: int, bottom: int) -> torch.Tensor:
    """F.pad(band, (side, side, top, bottom), mode="reflect") built from slices, so a channels_last
    band stays channels_last (F.pad returns NCHW: converting its output back cost 0.3 s at 8K)."""
    def cat(parts, dim):
        return torch.cat([p for p in parts if p.shape[dim]], dim=dim)
    if side:
        width = band.shape[-1]
        band = cat([band[..., 1:side + 1].flip(-1), band, band[..., width - side - 1:-1].flip(-1)], -1)
    if top or bottom:
        height = band.shape[-2]
        band = cat([band[..., 1:top + 1, :].flip(-2), band, band[..., height - bottom - 1:-1, :].flip(-2)], -2)
    return band


def _bands(rows: int, band: int):
    for r0 in range(0, rows, band):
        yield r0, min(rows, r0 + band)


class TiledRunner:
    """Exact layer-by-layer execution in row bands; see the module docstring.

    `stores`: "device", "host" or "disk" (where the full-frame activations live);
    `band_bytes`: the working memory one band may take on the compute device, which sets each
    layer's band height (at least one output row). Takes float (1, 3, H, W) in 0–255 with H, W
    multiples of 4, on any device; returns the raw network output, float32 (1, 3, H, W), on the
    compute device for device stores and on the CPU otherwise.
    """

    def __init__(self, model: TransformerNet, device: torch.device, dtype: torch.dtype,
                 stores: str = "device", band_bytes: int = 256 << 20, scratch: str | None = None,
                 fused: bool | None = None):
        self.device, self.dtype = torch.device(device), dtype
        self.store_kind, self.band_bytes, self.scratch = stores, band_bytes, scratch
        self.layout = torch.channels_last if self.device.type == "cuda" else torch.contiguous_format
        # The norms' affines and the head's bias as the checkpoint has them, taken before the cast:
        # the fused engine applies them in fp32, and rounded to bf16 they moved every norm.
        # (Copies: the cast below swaps a parameter's data in place, so a kept Parameter turns bf16.)
        layers = describe(model)
        self.head_bias = layers[-1].conv.bias.detach().to(self.device, wide_dtype(dtype), copy=True)
        self.norm_affines = {i: (layer.norm.weight.detach().to(device, torch.float64),
                                 layer.norm.bias.detach().to(device, torch.float64))
                             for i, layer in enumerate(layers) if layer.norm is not None}
        self.model = model.eval().requires_grad_(False).to(self.device, dtype, memory_format=self.layout)
        self.steps = plan_steps(self.model)
        # The fused engine's own ops per band (`_band_fused`): fp16/bf16 on Hopper by default; on
        # other devices they run their reference twins (tests pass fused=True for that).
        low = dtype in (torch.float16, torch.bfloat16)
        if fused is None:
            fused = low and kernels.conv3x3_norm_supported(self.device)
        self.fused = bool(fused) and low
        self.weights = {}
        if self.fused:
            for i, step in enumerate(self.steps):
                w = step.conv.weight
                self.weights[i] = kernels.pack_weight(w) if step.kernel == 3 else w.contiguous()
        self.bands_run = 0   # bands over all layers of the last call (tests check tiling happened)
        self.bands_fused = 0   # of which the fused engine's ops ran

    def band_rows(self, step: Step, width: int, channels_in: int) -> int:
        """Output rows per band such that the band's tensors fit `band_bytes`."""
        item = torch.empty((), dtype=self.dtype).element_size()
        virtual_width = width * step.upsample + 2 * step.pad
        in_per_row = virtual_width * channels_in * step.stride * (item + 4) * 2   # read, fp32 affine, pad
        out_per_row = step.out_size(width) * step.conv.out_channels * (item + 8)  # conv, fp32 moments
        halo = (step.kernel + 1) * virtual_width * channels_in * (item + 4) * 2
        return max(1, (self.band_bytes - halo) // (in_per_row + out_per_row))

    @torch.inference_mode()
    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        if image.dim() != 4 or image.shape[1] != 3:
            raise ValueError(f"expected (N, 3, H, W), got {tuple(image.shape)}")
        return torch.cat([self._one(image[i:i + 1]) for i in range(image.shape[0])])

    def _one(self, image: torch.Tensor) -> torch.Tensor:
        _, _, height, width = image.shape
        shapes = store_shapes(self.steps, height, width)
        last = last_reads(self.steps)
        stores = {"image": TensorStore.wrap(image)}
        pending: dict[str, _Pending | None] = {"image": None}
        self.bands_run = self.bands_fused = 0
        try:
            for index, step in enumerate(self.steps):
                if step.target not in stores:
                    kind = "host" if step.target == "out" and self.store_kind == "disk" else self.store_kind
                    stores[step.target] = make_store(kind, *shapes[step.target],
                                                     store_dtype(step.target, self.steps, self.dtype),
                                                     self.device, self.scratch)
                moments = self._conv(index, step, stores[step.source], pending[step.source], stores[step.target])
                pending[step.target] = (_Pending(*moments.affine(*self.norm_affines[index], step.norm.eps,
                                                                 wide_dtype(self.dtype)), step.relu)
                                        if step.norm is not None else None)
                if step.residual:
                    self._add_residual(stores[step.residual], pending[step.residual],
                                       stores[step.target], pending[step.target])
                    pending[step.residual] = None
                for name in [n for n in stores if last.get(n, -1) == index and n != "image"]:
                    stores.pop(name).close()
            out = stores["out"]
            return out.data
        finally:
            for store in stores.values():
                store.close()

    def _read(self, store, pending: _Pending | None, r0: int, r1: int) -> torch.Tensor:
        band = store.read(r0, r1, self.device)
        if pending is not None:
            band = torch.addcmul(pending.shift, band.to(pending.scale.dtype), pending.scale)
            if pending.relu:
                band = band.relu_()
        return band.to(self.dtype)

    def _conv(self, index: int, step: Step, source, pending: _Pending | None, target) -> _Moments:
        channels_in, height, width = source.shape
        out_rows = step.out_size(height)
        moments = _Moments(step.conv.out_channels, self.device)
        rows = self.band_rows(step, width, channels_in)
        for o0, o1 in _bands(out_rows, rows):
            out = None
            if self.fused:
                out = self._band_fused(index, step, source, pending, o0, o1, out_rows)
                self.bands_fused += out is not None
            if out is None:
                out = self._band(step, source, pending, o0, o1)
            if step.norm is not None:
                moments.add(out)
            target.write(o0, out)
            self.bands_run += 1
        return moments

    def _band(self, step: Step, source, pending: _Pending | None, o0: int, o1: int) -> torch.Tensor:
        """Output rows [o0, o1) with PyTorch ops: the band padded here, cuDNN's convolution."""
        height = source.shape[1]
        up, pad = step.upsample, step.pad
        virtual = height * up
        # Rows of the upsampled, reflection-padded input this band needs, in unpadded coordinates.
        a = o0 * step.stride - pad
        b = (o1 - 1) * step.stride - pad + step.kernel
        a_in, b_in = max(a, 0), min(b, virtual)
        r0, r1 = a_in // up, -(-b_in // up)
        band = self._read(source, pending, r0, r1)
        if up > 1:
            band = F.interpolate(band, scale_factor=up, mode="nearest")
            band = band[:, :, a_in - r0 * up:b_in - r0 * up]
        # Reflection only at the true borders (a < 0 or b > virtual); columns are whole rows.
        band = reflect_pad(band, pad, a_in - a, b - b_in).contiguous(memory_format=self.layout)
        return self._conv_band(step, band)

    def _band_fused(self, index: int, step: Step, source, pending: _Pending | None, o0: int, o1: int,
                    out_rows: int) -> torch.Tensor | None:
        """Output rows [o0, o1) with the fused engine's own op for the layer (conv9x9, conv3x3_norm),
        which applies the pending norm and ReLU on load and reflects at its input's edges: the band
        reads enough rows that the reflected ones only reach output rows it throws away, except at
        the image's true borders, where reflecting is right. None where the op cannot take it."""
        height = source.shape[1]
        s, u, p = step.stride, step.upsample, step.pad
        r0 = 0 if o0 == 0 else max(0, (o0 * s - p) // u)
        while (r0 * u) % s:   # output row j of the band must sit on a stride of the image's
            r0 -= 1
        r1 = height if o1 == out_rows else min(height, -(-((o1 - 1) * s + p + 1) // u))
        if (r1 - r0) * u <= p or (r1 - r0) * u < 2:
            return None
        band = source.read(r0, r1, self.device)
        scale = shift = None
        if pending is not None:
            scale, shift = (v.reshape(1, -1).float().contiguous() for v in (pending.scale, pending.shift))
        relu = pending is not None and pending.relu
        weight = self.weights[index]
        if step.kernel == 3:
            out = kernels.conv3x3_norm(band.contiguous(memory_format=torch.channels_last), weight, scale, shift,
                                       relu=relu, upsample=u, stride=s, stats=False)[0]
        elif step.norm is not None and pending is None:   # conv1: reads the float32 image
            out = kernels.conv9x9(band.float(), weight, None, pad=p)
        elif step.norm is None and scale is not None and relu:   # the head: norm + ReLU on load
            out = kernels.conv9x9(band.contiguous(memory_format=torch.channels_last), weight, self.head_bias,
                                  out_float32=True, scale=scale, shift=shift, pad=p)
        else:
            return None
        j0 = o0 - (r0 * u) // s
        return out[:, :, j0:j0 + (o1 - o0)]

    def _conv_band(self, step: Step, band: torch.Tensor) -> torch.Tensor:
        if step.norm is not None:   # a bias before InstanceNorm cancels; adding it only costs bits
            return F.conv2d(band, step.conv.weight, None, step.stride)
        if band.dtype in (torch.float16, torch.bfloat16):
            # The head: low-precision operands, float32 products and sums (exact in fp32 and TF32).
            return F.conv2d(band.float(), step.conv.weight.float(), self.head_bias, step.stride)
        return F.conv2d(band, step.conv.weight, self.head_bias.to(band.dtype), step.stride)

    def _add_residual(self, stream, stream_pending, block_out, block_pending) -> None:
        """stream ← norm(stream) + norm(block_out), in place, band by band; the normalised stream
        is rounded to the run's dtype first, as the fused engine stores a block's input."""
        _, height, width = stream.shape
        rows = max(1, self.band_bytes // (width * stream.shape[0] * 16))
        for r0, r1 in _bands(height, rows):
            x = self._read_float(stream, stream_pending, r0, r1)
            if stream_pending is not None:
                x = x.to(self.dtype).to(x.dtype)
            y = self._read_float(block_out, block_pending, r0, r1)
            stream.write(r0, x.add_(y))

    def _read_float(self, store, pending: _Pending | None, r0: int, r1: int) -> torch.Tensor:
        band = store.read(r0, r1, self.device).to(wide_dtype(self.dtype))
        if pending is not None:
            band = torch.addcmul(pending.shift, band, pending.scale)
            if pending.relu:
                band = band.relu_()
        return band
