"""The 9×9 layers' kernel durations on the GPU as the profiler sees them (no launch overhead), bf16,
called as the engine calls them: conv1 as conv9x9 and conv9x9_norm (IN1's sums) on the fp32 image
with pad 4, with its wgmma and its mma.sync kernel (STYLEFORGE_CONV1_KERNEL), 512² and 1080p; the
head as conv9x9_from_sums (IN5 from deconv2's sums, pad 4, fp32 out), 512², 1080p and 4K. Median of
10 calls each; the head's state is refilled before every call (what deconv2 leaves).
    PYTHONPATH=$PWD python3 dev/kernels/conv9x9/durations.py [conv1|head ...]
"""
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # kernel_durations
from kernel_durations import kernel_durations as durations

from styleforge import kernels
from styleforge.kernels import reference_norm_sums

OP = torch.ops.styleforge.conv9x9.default
NORM_OP = torch.ops.styleforge.conv9x9_norm.default
SIZES = ((512, 512), (1080, 1920), (2160, 3840))


def conv1(g):
    w = (torch.randn(32, 3, 9, 9, generator=g, device="cuda") / 15.6).to(torch.bfloat16)
    nw, nb = torch.ones(32, device="cuda"), torch.zeros(32, device="cuda")
    for h, wd in SIZES[:2]:
        x = torch.rand(1, 3, h, wd, generator=g, device="cuda") * 255
        state = kernels.norm_state(1, 32, "cuda")
        for kind in ("auto", "mma"):
            os.environ["STYLEFORGE_CONV1_KERNEL"] = kind
            plain = durations(lambda: OP(x, w, None, False, None, None, 4), "rgb")
            norm = durations(lambda: NORM_OP(x, w, 4, nw, nb, 1e-5, state), "rgb")
            print(f"conv1 {h}x{wd} {kind:4} conv9x9 {statistics.median(plain):7.2f} us   conv9x9_norm "
                  f"{statistics.median(norm):7.2f} us", flush=True)


def head(g):
    w = (torch.randn(3, 32, 9, 9, generator=g, device="cuda") / 51).to(torch.bfloat16)
    bias = torch.randn(3, generator=g, device="cuda")
    nw, nb = torch.rand(32, generator=g, device="cuda") + 0.5, torch.randn(32, generator=g, device="cuda") * 0.2
    for h, wd in SIZES:
        x = (torch.randn(1, 32, h, wd, generator=g, device="cuda") * 3 + 5).to(torch.bfloat16)
        x = x.contiguous(memory_format=torch.channels_last)
        filled = kernels.norm_state(1, 32, "cuda")
        reference_norm_sums.add_sums(filled, x)
        state = torch.empty_like(filled)
        d = durations(lambda: kernels.conv9x9_from_sums(x, w, bias, state, out_float32=True, pad=4,
                                                        norm_weight=nw, norm_bias=nb),
                      "head", before=lambda: state.copy_(filled))
        print(f"head {h}x{wd} conv9x9_from_sums {statistics.median(d):7.2f} us", flush=True)


def main():
    assert kernels.cuda_kernels_available()[0]
    g = torch.Generator(device="cuda").manual_seed(0)
    layers = sys.argv[1:] or ["conv1", "head"]
    for name in layers:
        {"conv1": conv1, "head": head}[name](g)


if __name__ == "__main__":
    main()
