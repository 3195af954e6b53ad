"""One conv9x9_from_sums call per (head kernel, size) inside the profiler's capture range, for
Nsight Compute (dev/kernels/conv9x9/head_ncu_device.sh): the wgmma head and the mma.sync head
(STYLEFORGE_HEAD_KERNEL), 512² and 4K, bf16, fp32 out, as the engine calls the head.
    ncu --profile-from-start off ... python3 dev/kernels/conv9x9/head_ncu.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels
from styleforge.kernels import reference_norm_sums


def main():
    assert kernels.cuda_kernels_available()[0]
    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(3, 32, 9, 9, generator=g, device="cuda") / 51).to(torch.bfloat16)
    bias = torch.randn(3, generator=g, device="cuda")
    nw, nb = torch.rand(32, generator=g, device="cuda") + 0.5, torch.randn(32, generator=g, device="cuda") * 0.2
    for h, wd in ((512, 512), (2160, 3840)):
        x = (torch.randn(1, 32, h, wd, generator=g, device="cuda") * 3 + 5).to(torch.bfloat16)
        x = x.contiguous(memory_format=torch.channels_last)
        state = kernels.norm_state(1, 32, "cuda")
        for kind in ("auto", "mma"):
            os.environ["STYLEFORGE_HEAD_KERNEL"] = kind
            for profiled in (False, True):   # a warm-up call first (the build, the attributes)
                reference_norm_sums.add_sums(state, x)
                if profiled:
                    torch.cuda.cudart().cudaProfilerStart()
                kernels.conv9x9_from_sums(x, w, bias, state, out_float32=True, pad=4, norm_weight=nw, norm_bias=nb)
                torch.cuda.synchronize()
                if profiled:
                    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
