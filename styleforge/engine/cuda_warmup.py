"""Start the CUDA driver and the GPU's context in a background thread while the CPU does other work.

A CUDA command's first CUDA call pays for the driver's start (`cuInit`) and then for the device's
primary context, the one the CUDA runtime (and so PyTorch) uses on that GPU: several tenths of a
second on an H200 host, spent in the driver with nothing else running. `start(device)` makes the
same two driver calls (`cuInit`, `cuDevicePrimaryCtxRetain`, through ctypes, which releases the
GIL) on a daemon thread, so they run while the main thread imports torch (the CLI calls it before
that import) or loads the weights and builds the model (`Stylizer`, whose CPU work comes before its
first CUDA call). PyTorch's own first calls then find the driver started and retain the same
context; where the thread has not finished, they wait for the driver's own locks, never longer
than they would have taken. The CUDA calls stay PyTorch's: this only starts earlier what they
would start anyway, on the GPU they would use.

It starts nothing (and changes nothing) where the device is the CPU, where the installed PyTorch
has no CUDA, where PyTorch has already initialised CUDA (the device in use may then be another
than the index the string names), where `STYLEFORGE_CUDA_WARMUP=0`, or where the driver library
is missing; any failure in the thread is dropped: PyTorch's own call then reports it as before.
Not for `--gpus` (each worker process picks its GPU through CUDA_VISIBLE_DEVICES, which the driver
reads at `cuInit`): callers start it for one device only.
"""
from __future__ import annotations

import ctypes
import importlib.util
import re
import sys
import threading
from pathlib import Path

from ..switches import cuda_driver_defaults, switches

DRIVER_LIBRARY = "libcuda.so.1"
_CUDA_VERSION = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*(\S.*)$", re.MULTILINE)

_lock = threading.Lock()
_thread: threading.Thread | None = None


def torch_has_cuda() -> bool:
    """Whether the installed PyTorch is a CUDA build, without importing torch where it is not
    imported yet (its `version.py` says: `cuda = '13.0'`, or None in a CPU build)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return getattr(getattr(torch, "version", None), "cuda", None) is not None
    try:
        spec = importlib.util.find_spec("torch")
        folders = list(spec.submodule_search_locations or ()) if spec is not None else []
        text = (Path(folders[0]) / "version.py").read_text() if folders else ""
    except (ImportError, OSError, ValueError):
        return False
    found = _CUDA_VERSION.search(text)
    return found is not None and found.group(1).strip() != "None"


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.cuda.is_initialized())


def device_ordinal(device: str) -> int | None:
    """The GPU a `--device` value ("auto", "cuda", "cuda:N", "cpu") will run on where CUDA is not
    started yet: N, or 0 (PyTorch's current device before anything sets it); None for the CPU."""
    name = str(device).strip().lower()
    if name in ("auto", "cuda"):
        return 0
    found = re.fullmatch(r"cuda:(\d+)", name)
    return int(found.group(1)) if found else None


def wanted(device: str) -> int | None:
    """The GPU to start, or None where `start` should do nothing (see the module's docstring)."""
    ordinal = device_ordinal(device)
    if ordinal is None or not switches().cuda_warmup or not torch_has_cuda() or _cuda_initialized():
        return None
    return ordinal


def _warm(ordinal: int, library: str) -> None:
    try:
        driver = ctypes.CDLL(library)
        if driver.cuInit(0) != 0:
            return
        handle, context = ctypes.c_int(), ctypes.c_void_p()
        if driver.cuDeviceGet(ctypes.byref(handle), ordinal) != 0:
            return
        # Retained for the process's life, as the runtime retains it: it ends with the process.
        driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), handle)
    except (OSError, AttributeError):   # no driver library, or one without these entry points
        return


def start(device: str, library: str = DRIVER_LIBRARY) -> threading.Thread | None:
    """Start the driver and `device`'s context on a daemon thread (once per process); → the
    thread, or None where nothing was started (now or before)."""
    global _thread
    ordinal = wanted(device)
    if ordinal is None or not sys.platform.startswith("linux"):
        return None
    with _lock:
        if _thread is not None:
            return None
        cuda_driver_defaults()   # before cuInit: the driver reads CUDA_MODULE_LOADING there
        _thread = threading.Thread(target=_warm, args=(ordinal, library), name="styleforge-cuda-warmup",
                                   daemon=True)
        _thread.start()
        return _thread
