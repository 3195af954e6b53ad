"""Checkpoint rules for the style network: one place that reads and writes weights.

Our format is safetensors (fp16 or fp32) with string metadata (style name, painting, licence,
training settings). pytorch/examples `.pth` files also load: `module.` prefixes (DataParallel)
are stripped, the legacy InstanceNorm `running_mean`/`running_var` buffers that old PyTorch
saved are dropped, and the result must match the network exactly (`strict=True`). `.pth` files
are read with `weights_only=True`, so a pickle cannot run code.

The format is told by the file's bytes, safetensors' own header rule first, not its suffix
(`X.SAFETENSORS`, a `.pth` that is really safetensors), and a file that is an image gets a message
saying so. A safetensors file's names, shapes and dtypes are checked from its header before any
tensor is read, so a 2 GB file with one wrong name is refused at once. Weights must be floating
point and finite: NaN, inf or integer weights would stylize every image black. The one exception is int8 storage
(`models.int8`): a weight stored as int8 next to its `<key>.scale` is dequantised on reading
(`save_checkpoint(..., int8=True)` writes such files; the built-in styles ship that way).
"""
from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .int8 import INT8_FORMAT, SCALE_SUFFIX, dequantize_int8, quantize_state
from .transformer_net import FULL_WIDTH, MODEL_WIDTHS, TransformerNet, width_of

LEGACY_KEY = re.compile(r"(^|\.)in\d+\.(running_mean|running_var|num_batches_tracked)$")


class CheckpointError(ValueError):
    """A file that is not a usable style-network checkpoint; the message says why."""


@dataclass
class Checkpoint:
    state_dict: dict[str, torch.Tensor]
    metadata: dict[str, str] = field(default_factory=dict)

    def training_settings(self) -> dict:
        raw = self.metadata.get("training")
        return json.loads(raw) if raw else {}


def expected_shapes(width: int = FULL_WIDTH) -> dict[str, tuple[int, ...]]:
    return dict(_expected_shapes(width))


@functools.cache
def _expected_shapes(width: int) -> dict[str, tuple[int, ...]]:
    # On the meta device: shapes without allocating or initialising 1.7M weights (a loaded
    # checkpoint asks twice, before and after reading its tensors).
    with torch.device("meta"):
        model = TransformerNet(width)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def _network_key(key: str) -> str | None:
    """A stored name → the network's name, or None for a legacy buffer that is dropped."""
    key = key.removeprefix("module.")
    return None if LEGACY_KEY.search(key) else key


def check_layout(shapes: dict[str, tuple[int, ...]], source: str) -> None:
    """Names (already mapped) and shapes must be exactly one network's (full or slim, told by
    conv1's shape); else CheckpointError."""
    width = width_of(shapes)
    want = expected_shapes(width if width in MODEL_WIDTHS.values() else FULL_WIDTH)
    missing = sorted(set(want) - set(shapes))
    unexpected = sorted(set(shapes) - set(want))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} keys (first: {', '.join(missing[:3])})")
        if unexpected:
            parts.append(f"unexpected {len(unexpected)} keys (first: {', '.join(unexpected[:3])})")
        raise CheckpointError(f"{source}: not a style-network checkpoint: {'; '.join(parts)}")
    for key, shape in want.items():
        if tuple(shapes[key]) != shape:
            raise CheckpointError(
                f"{source}: {key} has shape {tuple(shapes[key])}, the network needs {shape}")


def normalize_state_dict(raw: dict[str, torch.Tensor], source: str) -> dict[str, torch.Tensor]:
    """Explicit key map: strip `module.`, drop legacy buffers, then check names, shapes, values."""
    out: dict[str, torch.Tensor] = {}
    for key, value in raw.items():
        if not isinstance(value, torch.Tensor):
            raise CheckpointError(f"{source}: entry {key!r} is not a tensor")
        name = _network_key(key)
        if name is None:
            continue
        if not value.is_floating_point():
            raise CheckpointError(f"{source}: {name} holds {value.dtype} values; style weights are "
                                  "floating point (is this a quantized or damaged file?)")
        out[name] = value.float()
    check_layout({k: tuple(v.shape) for k, v in out.items()}, source)
    # numpy, not torch.isfinite: torch's first CPU reduction in a process spins up its thread
    # pool (0.45 s of a one-photo GPU run's start on an H200 host, ~1 ms this way)
    bad = [k for k, v in out.items() if not np.isfinite(v.detach().cpu().numpy()).all()]
    if bad:
        raise CheckpointError(f"{source}: {len(bad)} weights hold NaN or inf (first: {bad[0]}); the "
                              "file is damaged or its training diverged; use an earlier checkpoint")
    return out


IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff", ".gif",
                             ".heic", ".avif"})
_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG", b"GIF8", b"RIFF", b"BM", b"II*\x00", b"MM\x00*")


# safetensors' own limit on its JSON header (the Rust reader refuses larger ones).
SAFETENSORS_MAX_HEADER = 100_000_000


def is_safetensors(handle, size: int) -> bool:
    """The safetensors rule, checked alone: an 8-byte little-endian length N with N ≤ size − 8,
    then N bytes of JSON that open with '{' and hold an object. Checked before any other magic:
    N's low byte can be anything (0x80, a pickle's first byte, when N = 128 + 256·k; N = 19778
    opens with 'BM', a bitmap's magic), so the first byte alone says nothing."""
    handle.seek(0)
    head = handle.read(9)
    if len(head) < 9 or head[8:9] != b"{":
        return False
    length = int.from_bytes(head[:8], "little")
    if length > min(size - 8, SAFETENSORS_MAX_HEADER):
        return False
    handle.seek(8)
    try:
        header = json.loads(handle.read(length).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(header, dict)


def file_kind(path: Path) -> str:
    """'safetensors', 'torch' (zip or legacy pickle), 'image' or 'unknown', from the bytes:
    safetensors by its header rule first, then the zip and pickle magic, then images."""
    with open(path, "rb") as handle:
        if is_safetensors(handle, os.fstat(handle.fileno()).st_size):
            return "safetensors"
        handle.seek(0)
        head = handle.read(16)
    if head.startswith(b"PK\x03\x04") or head[:1] == b"\x80":
        return "torch"
    if head.startswith(_IMAGE_MAGIC) or path.suffix.lower() in IMAGE_SUFFIXES:
        return "image"
    return "unknown"


def torch_load_reason(exc: Exception) -> str:
    """torch.load's failure in a few words; its own text ("Weights only load failed … please
    file an issue") would send a user the wrong way."""
    text = str(exc)
    if "Weights only load failed" in text or "Unsupported global" in text:
        return "it holds Python objects, not only tensors; refused because loading it could run code"
    first = text.strip().splitlines()[0].split(". ")[0][:160] if text.strip() else type(exc).__name__
    return f"truncated or damaged: {first}"


def image_not_style_message(path: Path) -> str:
    return (f"{path} is an image, not a style: a style is a built-in name (styleforge styles "
            "lists them) or a trained .safetensors/.pth checkpoint. To use a painting as the "
            f"style, give --style-image {path} (any painting, no training), or train a style "
            f"from it (styleforge train --style-image {path} …)")


def load_torch_file(path: str | os.PathLike, what: str):
    """torch.load(path, weights_only=True), or ValueError with one line: an image, a pickle of
    Python objects (refused: loading it could run code) or a damaged file, named as such.
    `what` names the expected content, e.g. "VGG16 weights"."""
    path = Path(path)
    try:
        kind = file_kind(path)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if kind == "image":
        raise ValueError(f"{path}: is an image, not {what}")
    try:
        with open(path, "rb") as handle:   # a handle: torch would judge a path by its suffix
            return torch.load(handle, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a bad pickle; all mean the same
        raise ValueError(f"{path}: not loadable as {what} ({torch_load_reason(exc)})") from None


def _read_safetensors(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Names, shapes and dtypes checked from the header first; tensors read only if they fit."""
    from safetensors import SafetensorError, safe_open
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = dict(f.metadata() or {})
            keys = set(f.keys())
            scales = {k for k in keys if k.endswith(SCALE_SUFFIX)}
            names = {k: _network_key(k) for k in keys - scales}
            shapes = {name: tuple(f.get_slice(k).get_shape()) for k, name in names.items() if name}
            check_layout(shapes, str(path))
            for key, name in names.items():
                dtype = f.get_slice(key).get_dtype() if name else "F32"
                if dtype == "I8" and key + SCALE_SUFFIX in scales:
                    continue
                if not dtype.startswith(("F", "BF")):
                    raise CheckpointError(f"{path}: {name} holds {dtype} values; style weights are "
                                          "floating point (is this a quantized or damaged file?)")
            stray = sorted(s for s in scales if s.removesuffix(SCALE_SUFFIX) not in names)
            if stray:
                raise CheckpointError(f"{path}: scale {stray[0]} belongs to no weight")
            raw = {k: _read_tensor(f, k, scales) for k, name in names.items() if name}
    except CheckpointError:
        raise
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable safetensors file ({exc})") from None
    return raw, metadata


def _read_tensor(handle, key: str, scales: set[str]) -> torch.Tensor:
    """One stored tensor; an int8 one comes back dequantised with its per-channel scale."""
    value = handle.get_tensor(key)
    if value.dtype == torch.int8 and key + SCALE_SUFFIX in scales:
        scale = handle.get_tensor(key + SCALE_SUFFIX)
        if scale.shape != (value.shape[0],):
            raise CheckpointError(f"{key}{SCALE_SUFFIX} has shape {tuple(scale.shape)}, "
                                  f"needs ({value.shape[0]},)")
        return dequantize_int8(value, scale)
    return value


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        kind = file_kind(path)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if kind == "image":
        raise CheckpointError(image_not_style_message(path))
    if kind == "unknown":
        raise CheckpointError(f"{path}: neither a safetensors nor a PyTorch checkpoint "
                              "(empty, truncated or another kind of file)")
    if kind == "safetensors":
        raw, metadata = _read_safetensors(path)
    else:
        try:
            with open(path, "rb") as handle:   # a handle: torch would judge a path by its suffix
                raw = torch.load(handle, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for a bad pickle; all mean the same
            raise CheckpointError(f"{path}: not a loadable PyTorch checkpoint "
                                  f"({torch_load_reason(exc)})") from None
        if isinstance(raw, dict) and isinstance(raw.get("state_dict"), dict):
            raw = raw["state_dict"]
        if not isinstance(raw, dict):
            raise CheckpointError(f"{path}: holds a {type(raw).__name__}, not a state dict")
        metadata = {"source": "pytorch-examples-pth", "style": path.stem}
    return Checkpoint(normalize_state_dict(raw, str(path)), metadata)


def save_checkpoint(path: str | os.PathLike, state_dict: dict[str, torch.Tensor],
                    metadata: dict[str, str] | None = None, dtype: torch.dtype = torch.float16,
                    int8: bool = False) -> Path:
    """Write atomically and durably (`io.atomic`), so a crash never leaves half a checkpoint.
    `int8`: conv kernels as int8 with per-output-channel scales, the rest in `dtype`."""
    from safetensors.torch import save_file

    from ..io.atomic import atomic_write
    path = Path(path)
    state = normalize_state_dict(state_dict, str(path))
    tensors = (quantize_state(state, dtype) if int8 else
               {k: v.detach().to("cpu", dtype).contiguous() for k, v in state.items()})
    meta = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in (metadata or {}).items()}
    meta["quantization"] = INT8_FORMAT if int8 else str(dtype).removeprefix("torch.")
    # 0o644: a checkpoint is meant to be shared
    return atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta), mode=0o644)


def build_model(checkpoint: Checkpoint) -> TransformerNet:
    """The network (full or slim, as the weights' shapes say) holding the checkpoint's weights."""
    model = TransformerNet(width_of({k: tuple(v.shape) for k, v in checkpoint.state_dict.items()}))
    model.load_state_dict(checkpoint.state_dict, strict=True)
    return model.eval()
