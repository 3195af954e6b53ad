"""The arbitrary-style model on OpenVINO (CPU): VGG encoder and decoder INT8 or fp32, attention fp32.

`OpenVINOArbitraryNet(model, precision)` has `ArbitraryStyleNet`'s `stylize(content, styles,
alpha)` and `encode_style(painting)`. Three OpenVINO models, each exported once from the PyTorch
modules (dynamic batch, height and width) through `openvino_runner.load_or_build` (the same cache
and INT8 recipe as the built-in styles: NNCF post-training quantization): the encoder (VGG16
conv1_1…conv4_1; relu2_1 leaves it already 2× average-pooled, the only form the attention's keys
read, so a quarter of that tensor crosses to the next part: `encoder_levels`), the attention
blocks (`TransferPart`: the encoder's features and ONE painting's cached keys, values and
statistics as inputs, so one model serves every painting) and the decoder.
The attention part is always fp32 (its softmax and statistics are not quantized): exported with
the attention as one SDPA op on the keys' real width (the CUDA kernel's zero columns dropped),
which OpenVINO's CPU plugin runs fused, in a fraction of PyTorch's matmul–exp–matmul time
(docs/cpu.md). Several paintings and `alpha` are mixed in PyTorch after it, as
`transfer_features` mixes them.
Calibration data is made from the photos the package ships (`openvino_runner.calibration_images`):
the encoder's from the photos, the decoder's from those photos stylized with each other as the
painting (the PyTorch model), so a user's machine needs no other data.
Not here: choosing this path (`engine/arbitrary.py`), degrid and the passes (the engine's loop).
"""
from __future__ import annotations

import contextlib
import functools
import threading
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..kernels.dispatch import using
from ..models.arbitrary import ArbitraryStyleNet, StyleCode
from ..models.arbitrary import transfer as transfer_module
from ..models.arbitrary.encoder import LEVELS, level_index
from ..models.arbitrary.merge import merge_style_code
from ..models.arbitrary.model import pad_to_multiple, pooled, style_shares
from ..models.arbitrary.transfer import StyleLevel
from .openvino_runner import (
    PRECISIONS,
    calibration_images,
    compile_config,
    export,
    load_or_build,
    openvino_available,
    quantize,
)

ARBITRARY_RECIPE = 2   # bump when the calibration below changes: cached INT8 parts are rebuilt
TRANSFER_GRAPH = 3     # bump when `TransferPart`'s inputs or export change: its cached IR is rebuilt
CODE_FIELDS = 5        # per level: k, v, mean, std, bias
# A painting's keys per head on this path, merged from the model's (up to max_style_tokens) by
# `merge.py`: the attention's cost is linear in them. The quality held is in docs/cpu.md.
STYLE_TOKENS = {"relu3_1": 256, "relu4_1": 256}


def encoder_levels(model: ArbitraryStyleNet) -> tuple[str, ...]:
    """The encoder part's outputs, the keys of the features the transfer blocks read: each
    transfer level, and the one above the first pooled 2× (`pooled`: only its pool is read, the
    keys' `avgpool(F_above)`, so a quarter of it leaves the encoder)."""
    first = level_index(model.config.levels[0]) - 1
    return (pooled(LEVELS[first]), *LEVELS[first + 1:level_index(model.config.levels[-1]) + 1])


class EncoderPart(nn.Module):
    """(N, 3, H, W) 0–255 → the features of `levels` (`encoder_levels`), the first pooled."""

    def __init__(self, model: ArbitraryStyleNet):
        super().__init__()
        self.encoder, self.levels = model.encoder, encoder_levels(model)
        self.above = LEVELS[level_index(model.config.levels[0]) - 1]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        feats = self.encoder(x, last=self.levels[-1])
        feats[pooled(self.above)] = F.avg_pool2d(feats[self.above], 2)
        return tuple(feats[level] for level in self.levels)


class DecoderPart(nn.Module):
    """The transfer levels' outputs, shallow to deep → image (N, 3, H, W) 0–255, not clamped."""

    def __init__(self, model: ArbitraryStyleNet):
        super().__init__()
        self.model, self.levels = model, model.config.levels

    def forward(self, *feats: torch.Tensor) -> torch.Tensor:
        return self.model.decode(dict(zip(self.levels, feats)))


class TransferPart(nn.Module):
    """The encoder's features (`encoder_levels`), then per transfer level one painting's k, v,
    mean, std, bias (a `StyleLevel`'s fields; bias zeros for a code not merged) → the transfer
    levels' outputs, shallow to deep (alpha 1)."""

    def __init__(self, model: ArbitraryStyleNet):
        super().__init__()
        self.model, self.levels = model, encoder_levels(model)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n, per = len(self.levels), CODE_FIELDS
        code = {level: StyleLevel(*inputs[n + per * i:n + per * i + per])
                for i, level in enumerate(self.model.config.levels)}
        out = self.model.transfer_features(dict(zip(self.levels, inputs[:n])), [(code, 1.0)])
        return tuple(out[level] for level in self.model.config.levels)


@contextlib.contextmanager
def exportable_attention(qk_dim: int):
    """While exporting: the blocks' (biased) attention as one `F.scaled_dot_product_attention` on
    q and k's first `qk_dim` columns (the rest are the zero padding `AdaAttnBlock._heads` adds for
    the CUDA kernel: they change no dot product), the code's bias carried as one more column (k's
    holds the bias, q's holds 1/scale, so the logits gain exactly the bias: an additive mask input
    cost OpenVINO's fused kernel more), and the FFN as its PyTorch twin (the CPU op is a custom op
    no converter knows). The model's own transfer code is traced: one description of it."""
    def sdpa(q, k, v, bias, scale):
        q = torch.cat([q[..., :qk_dim], torch.full_like(q[..., :1], 1.0 / scale)], dim=-1)
        k = torch.cat([k[..., :qk_dim], bias.transpose(-1, -2).to(k.dtype)], dim=-1)
        return F.scaled_dot_product_attention(q, k, v, scale=scale)

    original = transfer_module.biased_attention
    transfer_module.biased_attention = sdpa
    try:
        with using("reference"):
            yield
    finally:
        transfer_module.biased_attention = original


def export_transfer(part: TransferPart, example: tuple[torch.Tensor, ...]):
    """`TransferPart` → an `openvino.Model`: batch, sizes and style tokens dynamic."""
    import openvino as ov
    n = len(part.levels)
    shapes = [ov.PartialShape([-1, t.shape[1], -1, -1]) for t in example[:n]]
    for k, v, mean, std, bias in zip(*[iter(example[n:])] * CODE_FIELDS):
        shapes += [ov.PartialShape([-1, k.shape[1], -1, k.shape[3]]), ov.PartialShape([-1, v.shape[1], -1, v.shape[3]]),
                   ov.PartialShape([-1, 1, mean.shape[2]]), ov.PartialShape([-1, 1, std.shape[2]]),
                   ov.PartialShape([-1, bias.shape[1], 1, -1])]
    with exportable_attention(part.model.config.qk_dim), torch.no_grad(), warnings.catch_warnings():
        # As `openvino_runner.export`: the trace notes the twins' argument checks as constants.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return ov.convert_model(part.float().eval(), example_input=example, input=shapes)


def code_inputs(code: StyleCode, levels: tuple[str, ...]) -> list[torch.Tensor]:
    """`TransferPart`'s code inputs; a level not merged gets a zero bias (one token per key)."""
    def bias(lv: StyleLevel) -> torch.Tensor:
        return lv.bias if lv.bias is not None else lv.k.new_zeros(lv.k.shape[0], lv.k.shape[1], 1, lv.k.shape[2])
    return [t for level in levels for t in (code[level].k, code[level].v, code[level].mean, code[level].std,
                                            bias(code[level]))]


def encoder_int8(encoder: EncoderPart, example: torch.Tensor, images: list):
    """The encoder part exported and quantized, its relu2_1 pool left reading the float relu2_1 (as
    the attention part did when the full tensor left the encoder), so only the convs' inputs are
    8 bits, as before the pool moved in."""
    import nncf
    return quantize(export(encoder, (example,)), images, nncf.IgnoredScope(types=["AvgPool"]))


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

    def __init__(self, model: ArbitraryStyleNet, precision: str = "int8", threads: int | None = None,
                 style_tokens: dict[str, int] | None = None):
        """`style_tokens`: level → tokens per head a painting's code is merged to (default
        `STYLE_TOKENS`; {} keeps the model's own)."""
        if precision not in PRECISIONS:
            raise ValueError(f"the OpenVINO backend runs {' or '.join(PRECISIONS)}, not {precision!r}")
        ok, reason = openvino_available(precision)
        if not ok:
            raise RuntimeError(f"--backend openvino is unavailable: {reason}")
        import openvino as ov
        self.model = model.float().eval()
        self.precision = precision
        self.style_tokens = dict(STYLE_TOKENS if style_tokens is None else style_tokens)
        self.levels = encoder_levels(model)
        threads = threads or torch.get_num_threads()
        encoder, decoder = EncoderPart(self.model), DecoderPart(self.model)
        calibration = functools.cache(lambda: _calibration(self.model))   # shared; none when cached
        tiny = torch.rand(1, 3, 4 * model.config.multiple, 4 * model.config.multiple) * 255
        with torch.no_grad():   # not inference_mode: the export traces these tensors
            tiny_feats = dict(zip(self.levels, encoder(tiny)))
            tiny_code = self.model.encode_style(tiny)
            dec_example = tuple(self.model.transfer_features(tiny_feats, [(tiny_code, 1.0)])[level]
                                for level in model.config.levels)
            transfer_example = (*(tiny_feats[level] for level in self.levels),
                                *code_inputs(tiny_code, model.config.levels))
        tag = f"arb{ARBITRARY_RECIPE}"
        enc_ir = load_or_build(encoder, precision, lambda m: export(m, (tiny,)), lambda: calibration()[0],
                               tag=f"{tag}-encoder", build_int8=lambda m, images: encoder_int8(m, tiny, images),
                               what="the any-painting model's encoder")
        dec_ir = load_or_build(decoder, precision, lambda m: export(m, dec_example),
                               lambda: calibration()[1], tag=f"{tag}-decoder",
                               what="the any-painting model's decoder")
        transfer_ir = load_or_build(TransferPart(self.model), "fp32",
                                    lambda m: export_transfer(m, transfer_example),
                                    tag=f"{tag}-transfer{TRANSFER_GRAPH}",
                                    what="the any-painting model's attention blocks")
        core = ov.Core()
        config = compile_config(precision, threads)
        self._encoder = core.compile_model(enc_ir, "CPU", config).create_infer_request()
        self._decoder = core.compile_model(dec_ir, "CPU", config).create_infer_request()
        self._transfer = core.compile_model(transfer_ir, "CPU", compile_config("fp32", threads)).create_infer_request()
        self._lock = threading.Lock()   # one request per part: the pipeline may call from threads

    def compiled(self) -> dict:
        """Part name → its `openvino.CompiledModel` (what `openvino_runner.executed_precisions` reads)."""
        return {"encoder": self._encoder.get_compiled_model(), "attention": self._transfer.get_compiled_model(),
                "decoder": self._decoder.get_compiled_model()}

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

    def transfer_one(self, feats: dict[str, torch.Tensor], code: StyleCode) -> list[torch.Tensor]:
        """One painting's transfer outputs (alpha 1), the code broadcast to the content's batch."""
        batch = feats[self.levels[0]].shape[0]
        arrays = [np.ascontiguousarray(feats[level].detach().float().numpy()) for level in self.levels]
        for t in code_inputs(code, self.model.config.levels):
            arrays.append(np.ascontiguousarray(np.broadcast_to(t.detach().float().numpy(),
                                                               (batch, *t.shape[1:]))))
        with self._lock:
            result = self._transfer.infer(dict(enumerate(arrays)))
            return [torch.from_numpy(np.array(result[i], copy=True)) for i in range(len(self.model.config.levels))]

    def transfer_features(self, feats: dict[str, torch.Tensor], styles: list[tuple[StyleCode, float]],
                          alpha: float = 1.0) -> dict[str, torch.Tensor]:
        """As `ArbitraryStyleNet.transfer_features`: the paintings mixed by share, then `alpha`."""
        shares = style_shares([w for _, w in styles])
        mixed = None
        for (code, _), share in zip(styles, shares):
            outs = [share * t for t in self.transfer_one(feats, code)]
            mixed = outs if mixed is None else [a + b for a, b in zip(mixed, outs)]
        return {level: m if alpha >= 1.0 else torch.lerp(feats[level], m, alpha)
                for level, m in zip(self.model.config.levels, mixed)}

    @torch.no_grad()
    def encode_style(self, painting: torch.Tensor) -> StyleCode:
        """As `ArbitraryStyleNet.encode_style` (the painting unpadded), the VGG part on OpenVINO,
        then merged to `style_tokens` keys per head."""
        code = self.model.encode_style_features(self.encode(painting.float()))
        return merge_style_code(code, self.style_tokens, self.model.config.qk_dim)

    @torch.no_grad()
    def stylize(self, content: torch.Tensor, styles: list[tuple[StyleCode, float]],
                alpha: float = 1.0) -> torch.Tensor:
        """As `ArbitraryStyleNet.stylize`: content (B, 3, H, W) 0–255 → the same, clamped."""
        h, w = content.shape[-2:]
        x = pad_to_multiple(content.float(), self.model.config.multiple)
        out = self.decode(self.transfer_features(self.encode(x), styles, alpha))
        return out[..., :h, :w].clamp(0, 255)

