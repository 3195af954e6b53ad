"""Weights files of the arbitrary-style model: one safetensors file with everything inference needs.

Keys are the model's own state-dict names: `encoder.features.N.*` (VGG16 from conv1_1 to the
deepest transfer level's conv, nothing deeper: inference needs no more), `transfer.*`, `merge.*`,
`decoder.*`. Metadata: `format`, `config` (the `ArbitraryConfig` as JSON), `quantization` and
free-form strings (training settings, losses, data). `int8=True` stores every weight matrix
and conv kernel as int8 with one fp16 scale per output channel (`<key>.scale`, symmetric,
amax/127) and the rest in fp16: half the bytes of fp16 (error: docs/arbitrary.md). Loading is
strict: every key present, right shapes. A file without the encoder keys (a slim export) takes
the encoder from a VGG16 file given separately. The shipped file's place is `DEFAULT_PATH`; if
it is missing, `load_arbitrary()` raises a one-line `ArbitraryWeightsError` saying what to do.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from ..int8 import INT8_FORMAT, SCALE_SUFFIX, dequantize_int8, quantize_int8  # noqa: F401 (re-exported)
from .config import LEVEL_ENDS
from .encoder import build_encoder, encoder_state_from_file
from .model import ArbitraryConfig, ArbitraryStyleNet

FORMAT = "styleforge-arbitrary/1"
DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "styles" / "arbitrary" / "arbitrary.safetensors"


class ArbitraryWeightsError(ValueError):
    """A missing or unusable arbitrary-style weights file; the message names it and the fix."""


def inference_state(model: ArbitraryStyleNet, include_encoder: bool = True) -> dict[str, torch.Tensor]:
    """The state inference needs: encoder convs up to the deepest transfer level only."""
    keep = LEVEL_ENDS[model.config.levels[-1]]
    return {k: v for k, v in model.state_dict().items()
            if not k.startswith("encoder.") or (include_encoder and int(k.split(".")[2]) < keep)}


def save_arbitrary(path: str | os.PathLike, model: ArbitraryStyleNet, metadata: dict | None = None,
                   dtype: torch.dtype = torch.float16, include_encoder: bool = True, int8: bool = False) -> Path:
    """Write atomically (temp file + rename). Non-string metadata values are stored as JSON."""
    from safetensors.torch import save_file
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for k, v in inference_state(model, include_encoder).items():
        if int8 and v.dim() >= 2:
            tensors[k], tensors[k + SCALE_SUFFIX] = quantize_int8(v)
        else:
            tensors[k] = v.detach().to("cpu", dtype).contiguous()
    meta = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in (metadata or {}).items()}
    meta.update(format=FORMAT, config=model.config.to_json(),
                quantization=INT8_FORMAT if int8 else str(dtype).removeprefix("torch."))
    from ...io.atomic import atomic_write  # its temp names are swept if a run is killed
    return atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta), mode=0o644)


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        return dict(f.metadata() or {})


def load_arbitrary(path: str | os.PathLike | None = None,
                   vgg_weights: str | os.PathLike | None = None) -> tuple[ArbitraryStyleNet, dict[str, str]]:
    """(model on the CPU in fp32, eval mode; the file's metadata). path None: the shipped file."""
    from safetensors.torch import load_file
    if path is None:
        if not DEFAULT_PATH.is_file():
            raise ArbitraryWeightsError(
                f"the arbitrary-style weights are missing from this installation ({DEFAULT_PATH}); "
                "reinstall styleforge, or pass --arbitrary-weights FILE (arbitrary_weights= in the "
                "API), a file written by `styleforge train-arbitrary`")
        path = DEFAULT_PATH
    path = Path(path).expanduser()
    if not path.is_file():
        raise ArbitraryWeightsError(f"arbitrary-style weights file {str(path)!r} does not exist")
    try:
        meta = read_metadata(path)
        tensors = load_file(str(path))
    except Exception as exc:  # safetensors raises several types for a damaged file
        raise ArbitraryWeightsError(f"{path}: not a readable safetensors file ({exc})") from None
    if meta.get("format") != FORMAT:
        raise ArbitraryWeightsError(f"{path}: not a styleforge arbitrary-style weights file "
                                    f"(format {meta.get('format')!r}, expected {FORMAT!r})")
    config = ArbitraryConfig.from_json(meta["config"])
    tensors = {k: (dequantize_int8(v, tensors[k + SCALE_SUFFIX]) if v.dtype == torch.int8 else v)
               for k, v in tensors.items() if not k.endswith(SCALE_SUFFIX)}
    encoder_state = {k.removeprefix("encoder."): v for k, v in tensors.items() if k.startswith("encoder.")}
    if not encoder_state:
        if vgg_weights is None:
            raise ArbitraryWeightsError(f"{path} holds no encoder; pass the VGG16 weights too "
                                        "(--vgg-weights vgg16_relu5_1.fp16.pth)")
        encoder_state = encoder_state_from_file(vgg_weights)
    model = ArbitraryStyleNet(config, build_encoder(encoder_state, config.widths))
    rest = {k: v.float() for k, v in tensors.items() if not k.startswith("encoder.")}
    missing, unexpected = model.load_state_dict(rest, strict=False)
    missing = [k for k in missing if not k.startswith("encoder.")]
    if missing or unexpected:
        raise ArbitraryWeightsError(f"{path}: keys do not fit the model (missing {missing[:3]}, "
                                    f"unexpected {unexpected[:3]})")
    return model.eval(), meta
