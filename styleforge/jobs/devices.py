"""`--gpus all|0,1,…` → the device strings the multi-device executor runs on.

A device string is `cuda:N` (N counts the GPUs this process sees, so it honours an outer
`CUDA_VISIBLE_DEVICES`) or `cpu`. Each worker process is started with `CUDA_VISIBLE_DEVICES`
naming its one GPU, so inside it the engine's plain `cuda` device is that GPU and nothing in
the engine, the codecs or the CUDA graphs has to carry an index. `cpu` devices exist so that the
same multi-process path runs in CI on a machine without a GPU (`--devices cpu,cpu`, a hidden flag).
Not here: starting the processes (`jobs.multi_device`).
"""
from __future__ import annotations

import re

from ..switches import cuda_mask

_INDEX = re.compile(r"^\d+$")
_DEVICE = re.compile(r"^(cpu|cuda:\d+)$")


def cuda_device_count() -> int:
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def parse_gpus(spec: str, count: int | None = None) -> tuple[str, ...]:
    """'all' or '0,1,…' → ('cuda:0', 'cuda:1', …); ValueError naming a GPU that does not exist,
    a repeated one, or a spec that is neither. `count`: the GPUs there are (None: ask torch)."""
    text = spec.strip().lower()
    parts = [p.strip() for p in text.split(",")] if text != "all" else []
    if text != "all" and (not parts or not all(_INDEX.match(p) for p in parts)):
        raise ValueError(f"--gpus {spec!r}: write all, or GPU numbers separated by commas, e.g. 0,1")
    count = cuda_device_count() if count is None else count
    if count == 0:
        raise ValueError(f"--gpus {spec}: PyTorch sees no CUDA GPU on this machine")
    indices = list(range(count)) if text == "all" else [int(p) for p in parts]
    missing = [i for i in indices if i >= count]
    if missing:
        seen = ", ".join(map(str, range(count)))
        raise ValueError(f"--gpus {spec}: no GPU {', '.join(map(str, missing))} here "
                         f"(this machine has {count}: {seen})")
    repeated = sorted({i for i in indices if indices.count(i) > 1})
    if repeated:
        raise ValueError(f"--gpus {spec}: GPU {', '.join(map(str, repeated))} is listed twice; "
                         "one engine per GPU")
    return tuple(f"cuda:{i}" for i in indices)


def parse_devices(spec: str) -> tuple[str, ...]:
    """'cpu,cpu' or 'cuda:0,cuda:1' → the tuple, checked (the hidden `--devices` flag)."""
    devices = tuple(p.strip().lower() for p in spec.split(",") if p.strip())
    bad = [d for d in devices if not _DEVICE.match(d)]
    if not devices or bad:
        raise ValueError(f"--devices {spec!r}: each entry is cpu or cuda:N")
    return devices


def worker_environment(device: str) -> dict[str, str]:
    """The environment changes a worker for `device` starts with."""
    if device == "cpu":
        return {}
    index = device.split(":", 1)[1]
    outer = cuda_mask()
    if outer is not None and outer.strip():
        visible = [v.strip() for v in outer.split(",") if v.strip()]
        index = visible[int(index)]
    return {"CUDA_VISIBLE_DEVICES": index}


def engine_device(device: str) -> str:
    """The `StylizeOptions.device` a worker for `device` uses (its one GPU is `cuda`)."""
    return "cpu" if device == "cpu" else "cuda"


def register_arguments(p) -> None:
    """`--gpus` (and the hidden `--devices` the CPU tests use) on a command's parser."""
    import argparse
    p.add_argument("--gpus", metavar="all|0,1,…", default=None,
                   help="one engine per listed GPU, each in its own process, sharing the files "
                        "(docs/multi_gpu.md); outputs are the bytes one GPU writes")
    p.add_argument("--devices", default=None, help=argparse.SUPPRESS)


def devices_from_args(args) -> tuple[str, ...] | None:
    """The devices `--gpus`/`--devices` name, or None for the one-process path; ValueError for
    a GPU that is not there, or for --gpus with --device cpu."""
    gpus, devices = getattr(args, "gpus", None), getattr(args, "devices", None)
    if gpus is None and devices is None:
        return None
    if gpus is not None and devices is not None:
        raise ValueError("give --gpus or --devices, not both")
    if gpus is not None and getattr(args, "device", "auto") == "cpu":
        raise ValueError(f"--gpus {gpus} runs on GPUs; leave out --device cpu")
    return parse_gpus(gpus) if gpus is not None else parse_devices(devices)
