"""Checkpoint rules for the style network: one place that reads and writes weights.

Our format is safetensors (fp16 or fp32) with string metadata (style name, painting, licence,
training settings). pytorch/examples `.pth` files also load: `module.` prefixes (DataParallel)
are stripped, the legacy InstanceNorm `running_mean`/`running_var` buffers that old PyTorch
saved are dropped, and the result must match the network exactly (`strict=True`). `.pth` files
are read with `weights_only=True`, so a pickle cannot run code.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .transformer_net import TransformerNet

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


def expected_shapes() -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in TransformerNet().state_dict().items()}


def normalize_state_dict(raw: dict[str, torch.Tensor], source: str) -> dict[str, torch.Tensor]:
    """Explicit key map: strip `module.`, drop legacy buffers, then check names and shapes."""
    out: dict[str, torch.Tensor] = {}
    for key, value in raw.items():
        if not isinstance(value, torch.Tensor):
            raise CheckpointError(f"{source}: entry {key!r} is not a tensor")
        key = key.removeprefix("module.")
        if LEGACY_KEY.search(key):
            continue
        out[key] = value.float()
    want = expected_shapes()
    missing = sorted(set(want) - set(out))
    unexpected = sorted(set(out) - set(want))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} keys (first: {', '.join(missing[:3])})")
        if unexpected:
            parts.append(f"unexpected {len(unexpected)} keys (first: {', '.join(unexpected[:3])})")
        raise CheckpointError(f"{source}: not a style-network checkpoint: {'; '.join(parts)}")
    for key, shape in want.items():
        if tuple(out[key].shape) != shape:
            raise CheckpointError(
                f"{source}: {key} has shape {tuple(out[key].shape)}, the network needs {shape}")
    return out


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if path.suffix == ".safetensors":
        from safetensors import SafetensorError, safe_open
        try:
            with safe_open(str(path), framework="pt") as f:
                metadata = dict(f.metadata() or {})
                raw = {k: f.get_tensor(k) for k in f.keys()}
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(f"{path}: unreadable safetensors file ({exc})") from None
    else:
        try:
            raw = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for a bad pickle; all mean the same
            raise CheckpointError(f"{path}: not a loadable PyTorch checkpoint ({exc})") from None
        if isinstance(raw, dict) and isinstance(raw.get("state_dict"), dict):
            raw = raw["state_dict"]
        if not isinstance(raw, dict):
            raise CheckpointError(f"{path}: holds a {type(raw).__name__}, not a state dict")
        metadata = {"source": "pytorch-examples-pth", "style": path.stem}
    return Checkpoint(normalize_state_dict(raw, str(path)), metadata)


def save_checkpoint(path: str | os.PathLike, state_dict: dict[str, torch.Tensor],
                    metadata: dict[str, str] | None = None, dtype: torch.dtype = torch.float16) -> Path:
    """Write atomically (temp file + rename), so a crash never leaves half a checkpoint."""
    from safetensors.torch import save_file
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu", dtype).contiguous()
               for k, v in normalize_state_dict(state_dict, str(path)).items()}
    meta = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in (metadata or {}).items()}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=meta)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a checkpoint is meant to be shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def build_model(checkpoint: Checkpoint) -> TransformerNet:
    model = TransformerNet()
    model.load_state_dict(checkpoint.state_dict, strict=True)
    return model.eval()
