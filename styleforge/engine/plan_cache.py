"""The fused engine's timed choices, kept on disk per GPU so that a new process does not time again.

`FusedRunner` times, per input shape, which plan's graph is fastest (four captures and their
timing: seconds at a large shape) and whether our 9×9 op or cuDNN runs each 9×9 layer. Those choices depend on the GPU,
the kernels and cuDNN, never on the image, so they are written to
`<kernel build folder>/plans-<gpu>-cudnn<version>.json` (the build folder's name already carries
the kernels' sources, torch, CUDA and the architecture) and read back by the next runner on the
same machine.
A damaged or unreadable file is ignored and rewritten; a cache that cannot be written only
costs the timing again. Entries are keyed by dtype, layer ("residual" for the plan) and shape.
This module times nothing; `engine.runner` and `engine.autotune` do.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path

import torch

from ..io.atomic import atomic_write
from .autotune import LayerChoice

log = logging.getLogger(__name__)
FORMAT = 1


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _key(dtype: torch.dtype, name: str, shape: tuple[int, ...]) -> str:
    return f"{_dtype_name(dtype)}|{name}|{'x'.join(map(str, shape))}"


class PlanCache:
    """Timed `LayerChoice`s by (dtype, layer, shape) in one JSON file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._entries: dict[str, dict] = self._read()

    @classmethod
    def for_device(cls, device: torch.device) -> PlanCache | None:
        """The cache of this GPU and kernel build; None where there is no build folder to use."""
        from ..kernels.build import build_directory
        try:
            capability = torch.cuda.get_device_capability(device)
            gpu = re.sub(r"[^A-Za-z0-9]+", "-", torch.cuda.get_device_name(device)).strip("-")
            cudnn = torch.backends.cudnn.version() or 0
            return cls(build_directory(capability) / f"plans-{gpu}-cudnn{cudnn}.json")
        except (OSError, RuntimeError) as exc:
            log.debug("no plan cache: %s", exc)
            return None

    def _read(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("choices"), dict):
            return {}
        return data["choices"]

    def choices(self, dtype: torch.dtype) -> dict[tuple[str, tuple[int, ...]], LayerChoice]:
        """{(layer, shape): LayerChoice} of `dtype`, as `FusedRunner.layer_choices` keys them."""
        prefix = f"{_dtype_name(dtype)}|"
        found = {}
        for key, entry in self._entries.items():
            if not key.startswith(prefix):
                continue
            try:
                _, name, shape = key.split("|")
                found[(name, tuple(int(v) for v in shape.split("x")))] = LayerChoice(
                    entry["provider"], "cached", entry.get("op_ms"), entry.get("cudnn_ms"), entry.get("plans"))
            except (KeyError, TypeError, ValueError):
                continue   # an entry from another version: time that shape again
        return found

    def record(self, dtype: torch.dtype, name: str, shape: tuple[int, ...], choice: LayerChoice) -> None:
        """Keep a choice that was timed on this machine and write the file (atomically)."""
        entry = {"provider": choice.provider, "op_ms": choice.op_ms, "cudnn_ms": choice.cudnn_ms,
                 "plans": choice.plans}
        with self._lock:
            self._entries[_key(dtype, name, shape)] = entry
            text = json.dumps({"format": FORMAT, "choices": self._entries}, indent=0, sort_keys=True)
            try:
                atomic_write(self.path, lambda tmp: Path(tmp).write_text(text))
            except OSError as exc:
                log.debug("plan cache not written: %s", exc)
