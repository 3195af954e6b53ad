"""Weights files of the arbitrary-style model: one safetensors file with everything inference needs.

Keys are the model's own state-dict names: `encoder.features.N.*` (VGG16 conv1_1…conv5_1, held
once: the same encoder is the training loss network), `transfer.*`, `merge.*`, `decoder.*`.
Metadata: `format`, `config` (the `ArbitraryConfig` as JSON) and free-form strings (training
settings, losses, data). Loading is strict: every key present, right shapes. A file without the
encoder keys (a slim export) takes the encoder from a VGG16 file given separately. The shipped
file's place is `DEFAULT_PATH`; until a trained one ships, `load_arbitrary()` raises a one-line
`ArbitraryWeightsError` that says how to pass a file.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch

from .encoder import build_encoder, encoder_state_from_file
from .model import ArbitraryConfig, ArbitraryStyleNet

FORMAT = "styleforge-arbitrary/1"
DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "styles" / "arbitrary" / "arbitrary.safetensors"


class ArbitraryWeightsError(ValueError):
    """A missing or unusable arbitrary-style weights file; the message names it and the fix."""


def save_arbitrary(path: str | os.PathLike, model: ArbitraryStyleNet, metadata: dict | None = None,
                   dtype: torch.dtype = torch.float16, include_encoder: bool = True) -> Path:
    """Write atomically (temp file + rename). Non-string metadata values are stored as JSON."""
    from safetensors.torch import save_file
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = model.state_dict() if include_encoder else model.trainable_state_dict()
    tensors = {k: v.detach().to("cpu", dtype).contiguous() for k, v in state.items()}
    meta = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in (metadata or {}).items()}
    meta.update(format=FORMAT, config=model.config.to_json())
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=meta)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


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
                "no trained arbitrary-style weights ship with this styleforge yet; pass "
                "--arbitrary-weights FILE (arbitrary_weights= in the API), a file written by "
                "`styleforge train-arbitrary`")
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
    encoder_state = {k.removeprefix("encoder."): v for k, v in tensors.items() if k.startswith("encoder.")}
    if not encoder_state:
        if vgg_weights is None:
            raise ArbitraryWeightsError(f"{path} holds no encoder; pass the VGG16 weights too "
                                        "(--vgg-weights vgg16_relu5_1.fp16.pth)")
        encoder_state = encoder_state_from_file(vgg_weights)
    model = ArbitraryStyleNet(config, build_encoder(encoder_state))
    rest = {k: v.float() for k, v in tensors.items() if not k.startswith("encoder.")}
    missing, unexpected = model.load_state_dict(rest, strict=False)
    missing = [k for k in missing if not k.startswith("encoder.")]
    if missing or unexpected:
        raise ArbitraryWeightsError(f"{path}: keys do not fit the model (missing {missing[:3]}, "
                                    f"unexpected {unexpected[:3]})")
    return model.eval(), meta
