"""The cuDNN flags a runner's convolutions need, set on PyTorch's process-wide flags and put back.

`torch.backends.cudnn.benchmark`, `.deterministic` and `.allow_tf32` are one global state, not
per thread: two threads that each save, set and restore them (a video's engine thread and the
caller's thread, each with its own runner) interleave, and the later restore writes back the
other's setting: with a plain save/restore the autotuner could stay on after both have left,
and then any convolution anywhere in the process times its algorithms, synchronising the whole
device (`engine.capture` says why that breaks another thread's capture). Here the sections
that are open form one list: the flags are always those of the newest open section, and the
caller's own values come back when the last one closes. Overlapping sections of different
threads therefore run with the newer one's flags: an eager call may autotune (slower once) or
a warm-up may not (its graph takes cuDNN's heuristic choice); neither is an error, because
every such section runs under `engine.capture.cuda_work` or a capture, never beside one.

Not here: which values a runner asks for and why (`engine.runner`).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

_lock = threading.Lock()
_open: list[tuple[bool, bool, bool]] = []   # (benchmark, deterministic, allow_tf32) per open section
_callers: tuple[bool, bool, bool] | None = None


def _apply(values: tuple[bool, bool, bool]) -> None:
    cudnn = torch.backends.cudnn
    cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32 = values


@contextlib.contextmanager
def cudnn_flags(benchmark: bool, deterministic: bool, allow_tf32: bool) -> Iterator[None]:
    """cuDNN's three flags set to these for the block (see the module's note on overlaps)."""
    global _callers
    entry = (benchmark, deterministic, allow_tf32)
    with _lock:
        if not _open:
            cudnn = torch.backends.cudnn
            _callers = (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32)
        _open.append(entry)
        _apply(entry)
    try:
        yield
    finally:
        with _lock:
            # Not necessarily the last entry: another thread may have opened one since.
            del _open[len(_open) - 1 - _open[::-1].index(entry)]
            _apply(_open[-1] if _open else _callers)
