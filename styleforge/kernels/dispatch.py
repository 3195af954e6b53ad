"""The reference|cuda switch every op's Python entry consults, and the one-time CUDA kernel load.

`use("reference" | "cuda")` and the `using(...)` context manager route every op through its
pure-PyTorch twin or through `torch.ops.styleforge.*`; `ensure_cuda_kernels()` builds (first use,
cached; `build.py`) and loads the CUDA library once per process and never raises: on failure the
twins keep serving CUDA tensors and one warning says so. Not an op and not the build itself.
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

import torch

from .library import register_ops

MODES = ("reference", "cuda")

# ---- loading the CUDA kernels ---------------------------------------------------------------

_load_lock = threading.Lock()
_cuda_state: tuple[bool, str] | None = None   # (loaded, where or why not), once tried


def ensure_cuda_kernels() -> tuple[bool, str]:
    """Build (first use, cached) and load the CUDA kernels once per process; never raises.

    On failure the reference twin keeps serving CUDA tensors and a warning says so, once.
    """
    global _cuda_state
    if _cuda_state is not None:
        return _cuda_state
    register_ops()   # the schemas the extension's CUDA implementations attach to
    with _load_lock:
        if _cuda_state is None:
            if not torch.cuda.is_available():
                _cuda_state = (False, "PyTorch sees no CUDA device")
            else:
                from . import build
                try:
                    path = build.build_and_load()
                    _cuda_state = (True, str(path))
                except Exception as exc:  # nvcc, ninja, the compiler and the loader all raise differently
                    reason = f"building the StyleForge CUDA kernels failed: {exc}"
                    warnings.warn(f"{reason.splitlines()[0]} — the PyTorch reference implementation runs "
                                  "instead (slower). `styleforge build --verbose` shows the full log.",
                                  RuntimeWarning, stacklevel=2)
                    _cuda_state = (False, reason)
    return _cuda_state


def cuda_kernels_available() -> tuple[bool, str]:
    """(usable, reason): whether the CUDA kernels are built and loaded in this process."""
    return ensure_cuda_kernels()


# ---- the reference|cuda switch ------------------------------------------------------------------

_mode = "cuda"


def use(mode: str) -> None:
    """Route every op through its pure-PyTorch twin ("reference") or through the op ("cuda").

    "cuda" calls `torch.ops.styleforge.*`, which runs the CUDA kernels on CUDA tensors
    (building them on first use) and the twins on CPU tensors.
    """
    global _mode
    if mode not in MODES:
        raise ValueError(f"kernels.use: mode must be one of {MODES}, got {mode!r}")
    _mode = mode


def current_mode() -> str:
    return _mode


@contextlib.contextmanager
def using(mode: str) -> Iterator[None]:
    previous = _mode
    use(mode)
    try:
        yield
    finally:
        use(previous)
