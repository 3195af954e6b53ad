"""Run a dev script with the package's kernels built with extra nvcc flags (their own cache key),
for A/B runs of a compile-time switch in one device call:
    PYTHONPATH=$PWD python3 dev/kernels/frame/with_flags.py "-DSF_NO_CACHE_HINTS=1" SCRIPT [ARGS...]
    PYTHONPATH=$PWD python3 dev/kernels/frame/with_flags.py "-DSF_NO_CACHE_HINTS=1" -m MODULE [ARGS...]
"""
from __future__ import annotations

import runpy
import sys

from styleforge.kernels import build

if __name__ == "__main__":
    flags = sys.argv[1].split()
    build.CUDA_FLAGS = (*build.CUDA_FLAGS, *flags)
    if sys.argv[2] == "-m":
        sys.argv = sys.argv[3:]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv = sys.argv[2:]
        runpy.run_path(sys.argv[0], run_name="__main__")
