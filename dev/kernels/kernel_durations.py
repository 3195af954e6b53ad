"""Kernel durations as the profiler sees them (device time, no launch overhead), for the dev timing
scripts (conv9x9/durations.py, conv3x3/conv2_durations.py). Not a package: they put this folder on
sys.path.
"""
from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile


def kernel_durations(fn, key: str, calls: int = 10, before=None) -> list[float]:
    """Device times (µs) of the kernels whose names contain `key` over `calls` calls of fn, after one
    warm-up call; before() runs ahead of every call, its own kernels not counted unless they match."""
    if before:
        before()
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            if before:
                before()
            fn()
        torch.cuda.synchronize()
    return [e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and key in e.name]
