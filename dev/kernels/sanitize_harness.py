"""What the kernels' compute-sanitizer sweeps (dev/kernels/<op>/sanitize.py) share: the check that
the CUDA kernels load (exit code 2 when not) and the closing report of calls and failures (exit
code 1 on any). The sweeps run as scripts and import it from this folder; neither the package nor
the tests import it, and it is no sanitizer target itself.
"""
from __future__ import annotations

import sys

import torch

from styleforge import kernels


def kernels_unavailable() -> bool:
    """True, with the reason on stderr, when the CUDA kernels cannot load."""
    ok, reason = kernels.cuda_kernels_available()
    if not ok:
        sys.stderr.write(f"CUDA kernels unavailable: {reason}\n")
    return not ok


def report(calls: int, failures: list[str]) -> int:
    """Once the GPU's work is done: the number of calls and failures, then each failure; the exit code."""
    torch.cuda.synchronize()
    print(f"{calls} calls, {len(failures)} failures")
    for line in failures:
        print("FAIL", line)
    return 1 if failures else 0
