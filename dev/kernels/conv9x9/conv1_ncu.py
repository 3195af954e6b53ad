"""One conv9x9 and one conv9x9_norm call (conv1 as the engine calls it: the fp32 image, pad 4,
bf16; IN1's sums left in the state) at 512² inside the profiler's capture range, for Nsight Compute
(dev/kernels/ncu_device.sh): where the statistics' extra time goes.
    ncu --profile-from-start off ... python3 dev/kernels/conv9x9/conv1_ncu.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels

kernels.register_ops()   # ops are defined on first use (kernels/library.py); this calls them directly

OP = torch.ops.styleforge.conv9x9.default


def main():
    assert kernels.cuda_kernels_available()[0]
    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(32, 3, 9, 9, generator=g, device="cuda") / 15.6).to(torch.bfloat16)
    x = torch.rand(1, 3, 512, 512, generator=g, device="cuda") * 255
    state = kernels.norm_state(1, 32, "cuda")
    calls = [lambda: OP(x, w, None, False, None, None, 4),
             lambda: kernels.conv9x9_norm(x, w, pad=4, state=state, affine=False)]
    for call in calls:
        for profiled in (False, True):   # a warm-up call first (the build, the attributes)
            state.zero_()
            if profiled:
                torch.cuda.cudart().cudaProfilerStart()
            call()
            torch.cuda.synchronize()
            if profiled:
                torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
