"""conv1's kernel durations on the GPU as the profiler sees them (no launch overhead): conv9x9 and
conv9x9_norm (IN1's sums), the wgmma and the mma.sync kernel (STYLEFORGE_CONV1_KERNEL), 512² and 1080p,
bf16, the fp32 image with pad 4 as the engine calls it. Median of 10 calls each.
    PYTHONPATH=$PWD python3 dev/kernels/conv9x9/conv1_durations.py
"""
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels

OP = torch.ops.styleforge.conv9x9.default
NORM_OP = torch.ops.styleforge.conv9x9_norm.default


def durations(fn, calls=10):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return [e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "rgb" in e.name]


def main():
    assert kernels.cuda_kernels_available()[0]
    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(32, 3, 9, 9, generator=g, device="cuda") / 15.6).to(torch.bfloat16)
    nw, nb = torch.ones(32, device="cuda"), torch.zeros(32, device="cuda")
    for h, wd in ((512, 512), (1080, 1920)):
        x = torch.rand(1, 3, h, wd, generator=g, device="cuda") * 255
        state = kernels.norm_state(1, 32, "cuda")
        for kind in ("auto", "mma"):
            os.environ["STYLEFORGE_CONV1_KERNEL"] = kind
            plain = durations(lambda: OP(x, w, None, False, None, None, 4))
            norm = durations(lambda: NORM_OP(x, w, 4, nw, nb, 1e-5, state))
            print(f"{h}x{wd} {kind:4} conv9x9 {statistics.median(plain):7.2f} us   conv9x9_norm "
                  f"{statistics.median(norm):7.2f} us", flush=True)


if __name__ == "__main__":
    main()
