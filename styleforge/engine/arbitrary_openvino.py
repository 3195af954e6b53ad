"""The arbitrary-style model's convolutions on OpenVINO (CPU): VGG encoder and decoder, INT8 or fp32.

`OpenVINOArbitraryNet(model, precision)` has `ArbitraryStyleNet`'s `stylize(content, styles,
alpha)` and `encode_style(painting)`. Nearly all of a frame's multiply-adds are in the encoder
(VGG16 conv1_1…conv4_1) and the decoder; those two run as OpenVINO models exported once from
the PyTorch modules (dynamic batch, height and width) through `openvino_runner.load_or_build`
(the same cache and INT8 recipe as the built-in styles: NNCF post-training quantization). The
attention blocks between them (`transfer_features`, whose inputs include the painting's cached
keys and values) stay in PyTorch fp32: they are a small share of the work and depend on the style.
Calibration data is made from the photos the package ships (`openvino_runner.calibration_images`):
the encoder's from the photos, the decoder's from those photos stylized with each other as the
painting (the PyTorch model), so a user's machine needs no other data.
Not here: choosing this path (`engine/arbitrary.py`), degrid and the passes (the engine's loop).
"""
from __future__ import annotations

import functools
import threading

import numpy as np
import torch
from torch import nn

from ..models.arbitrary import ArbitraryStyleNet, StyleCode
from ..models.arbitrary.encoder import LEVELS, level_index
from ..models.arbitrary.model import pad_to_multiple
from .openvino_runner import (
    PRECISIONS,
    calibration_images,
    compile_config,
    export,
    load_or_build,
    openvino_available,
)

ARBITRARY_RECIPE = 1   # bump when the calibration below changes: cached INT8 parts are rebuilt


def encoder_levels(model: ArbitraryStyleNet) -> tuple[str, ...]:
    """The VGG levels the transfer blocks read: each transfer level and the one above it."""
    first = level_index(model.config.levels[0]) - 1
    return LEVELS[first:level_index(model.config.levels[-1]) + 1]


class EncoderPart(nn.Module):
    """(N, 3, H, W) 0–255, H, W multiples of the model's stride → the features of `levels`."""

    def __init__(self, model: ArbitraryStyleNet):
        super().__init__()
        self.encoder, self.levels = model.encoder, encoder_levels(model)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        feats = self.encoder(x, last=self.levels[-1])
        return tuple(feats[level] for level in self.levels)


class DecoderPart(nn.Module):
    """The transfer levels' outputs, shallow to deep → image (N, 3, H, W) 0–255, not clamped."""

    def __init__(self, model: ArbitraryStyleNet):
        super().__init__()
        self.model, self.levels = model, model.config.levels

    def forward(self, *feats: torch.Tensor) -> torch.Tensor:
        return self.model.decode(dict(zip(self.levels, feats)))


def _calibration(model: ArbitraryStyleNet) -> tuple[list, list]:
    """(encoder inputs, decoder inputs) from the shipped photos; each photo at 256 px is styled by
    the next photo's code, so the decoder's ranges come from real transfer outputs."""
    photos = [torch.from_numpy(a) for a in calibration_images()]
    multiple = model.config.multiple
    enc_in = [pad_to_multiple(p, multiple).numpy() for p in photos]
    dec_in = []
    with torch.inference_mode():
        codes = [model.encode_style(pad_to_multiple(p, multiple)) for p in photos[::4]]
        for i, photo in enumerate(photos):
            feats = model.encode(pad_to_multiple(photo, multiple))
            out = model.transfer_features(feats, [(codes[(i // 4 + 1) % len(codes)], 1.0)])
            dec_in.append([out[level].numpy() for level in model.config.levels])
    return enc_in, dec_in


class OpenVINOArbitraryNet:
    """The arbitrary model with its encoder and decoder on OpenVINO (see the module docstring)."""

    def __init__(self, model: ArbitraryStyleNet, precision: str = "int8", threads: int | None = None):
        if precision not in PRECISIONS:
            raise ValueError(f"the OpenVINO backend runs {' or '.join(PRECISIONS)}, not {precision!r}")
        ok, reason = openvino_available(precision)
        if not ok:
            raise RuntimeError(f"--backend openvino is unavailable: {reason}")
        import openvino as ov
        self.model = model.float().eval()
        self.precision = precision
        self.levels = encoder_levels(model)
        threads = threads or torch.get_num_threads()
        encoder, decoder = EncoderPart(self.model), DecoderPart(self.model)
        calibration = functools.cache(lambda: _calibration(self.model))   # shared; none when cached
        tiny = torch.zeros(1, 3, 4 * model.config.multiple, 4 * model.config.multiple)
        with torch.no_grad():   # not inference_mode: the export traces these tensors
            dec_example = tuple(self.model.transfer_features(self.model.encode(tiny),
                                                             [(self.model.encode_style(tiny), 1.0)])[level]
                                for level in model.config.levels)
        tag = f"arb{ARBITRARY_RECIPE}"
        enc_ir = load_or_build(encoder, precision, lambda m: export(m, (tiny,)),
                               lambda: calibration()[0], tag=f"{tag}-encoder")
        dec_ir = load_or_build(decoder, precision, lambda m: export(m, dec_example),
                               lambda: calibration()[1], tag=f"{tag}-decoder")
        core = ov.Core()
        config = compile_config(precision, threads)
        self._encoder = core.compile_model(enc_ir, "CPU", config).create_infer_request()
        self._decoder = core.compile_model(dec_ir, "CPU", config).create_infer_request()
        self._lock = threading.Lock()   # one request per part: the pipeline may call from threads

    def encode(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        array = np.ascontiguousarray(x.detach().float().numpy())
        with self._lock:
            result = self._encoder.infer({0: array})
            outs = [torch.from_numpy(np.array(result[i], copy=True)) for i in range(len(self.levels))]
        return dict(zip(self.levels, outs))

    def decode(self, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        arrays = {i: np.ascontiguousarray(feats[level].detach().float().numpy())
                  for i, level in enumerate(self.model.config.levels)}
        with self._lock:
            out = np.array(self._decoder.infer(arrays)[0], copy=True)
        return torch.from_numpy(out)

    @torch.no_grad()
    def encode_style(self, painting: torch.Tensor) -> StyleCode:
        """As `ArbitraryStyleNet.encode_style` (the painting unpadded), the VGG part on OpenVINO."""
        return self.model.encode_style_features(self.encode(painting.float()))

    @torch.no_grad()
    def stylize(self, content: torch.Tensor, styles: list[tuple[StyleCode, float]],
                alpha: float = 1.0) -> torch.Tensor:
        """As `ArbitraryStyleNet.stylize`: content (B, 3, H, W) 0–255 → the same, clamped."""
        h, w = content.shape[-2:]
        x = pad_to_multiple(content.float(), self.model.config.multiple)
        out = self.decode(self.model.transfer_features(self.encode(x), styles, alpha))
        return out[..., :h, :w].clamp(0, 255)

