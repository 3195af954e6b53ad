"""conv2's kernel duration as the profiler sees it (no launch overhead), called as the engine calls it
at 512²: 32 → 64, stride 2, on a 512² raw conv1 output, IN1 from conv1's sums on load (in_state,
refilled before every call, as conv1 leaves it), ReLU, IN2's sums left in a state (affine=False);
bf16. Median of 20 calls. --once: one call per size inside the profiler capture range, no timing (for
Nsight Compute: dev/kernels/ncu_device.sh).
    PYTHONPATH=$PWD python3 dev/kernels/conv3x3/conv2_durations.py [--once]
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # kernel_durations
from kernel_durations import kernel_durations

from styleforge import kernels
from styleforge.kernels import reference_conv3x3 as ref
from styleforge.kernels import reference_norm_sums


def main():
    assert kernels.cuda_kernels_available()[0]
    g = torch.Generator(device="cuda").manual_seed(2)
    for size in (512, 1080):
        h, w = (size, size) if size == 512 else (1080, 1920)
        x = (torch.randn(1, 32, h, w, generator=g, device="cuda") * 2 + 1).to(torch.bfloat16)
        x = x.contiguous(memory_format=torch.channels_last)
        weight = ref.pack_weight((torch.randn(64, 32, 3, 3, generator=g, device="cuda") / 17).to(torch.bfloat16))
        nw, nb = torch.rand(32, generator=g, device="cuda") + 0.5, torch.randn(32, generator=g, device="cuda") * 0.1
        filled = kernels.norm_state(1, 32, "cuda")
        reference_norm_sums.add_sums(filled, x)
        in_state = torch.empty_like(filled)
        out_state = kernels.norm_state(1, 64, "cuda")

        def call():
            kernels.conv3x3_norm(x, weight, relu=True, stride=2, state=out_state, in_state=in_state,
                                 in_norm_weight=nw, in_norm_bias=nb, affine=False)

        def reset():
            in_state.copy_(filled)
            out_state.zero_()

        if "--once" in sys.argv:   # the profiler capture range of dev/kernels/ncu_device.sh
            reset()
            torch.cuda.cudart().cudaProfilerStart()
            call()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            continue
        d = kernel_durations(call, "conv3x3_kernel", calls=20, before=reset)
        print(f"conv2 {h}x{w} -> {(h + 1) // 2}x{(w + 1) // 2}: {statistics.median(d):7.2f} us (median of {len(d)})",
              flush=True)


if __name__ == "__main__":
    main()
