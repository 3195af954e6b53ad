"""The head (deconv3, 9×9 32 → 3) as the 512² frame calls it, for Nsight Compute: IN5 applied on
load, reflection pad 4 in the addressing, bf16 in and out. Warm-up calls, then one more that ncu
can pick (--launch-skip).
    ncu --kernel-name regex:head_kernel --launch-skip 3 --launch-count 1 --set full \
        python3 dev/kernels/conv9x9/head_probe.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels

kernels.register_ops()   # ops are defined on first use (kernels/library.py); this calls them directly

ok, reason = kernels.cuda_kernels_available()   # loads the CUDA library: else the op runs its twin
assert ok, reason
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(1, 32, 512, 512, device="cuda", generator=g).to(torch.bfloat16).contiguous(
    memory_format=torch.channels_last)
weight = (torch.randn(3, 32, 9, 9, device="cuda", generator=g) / 50).to(torch.bfloat16)
bias = torch.randn(3, device="cuda", generator=g)
scale, shift = torch.rand(1, 32, device="cuda", generator=g) + 0.5, torch.randn(1, 32, device="cuda", generator=g)
for _ in range(4):
    out = torch.ops.styleforge.conv9x9(x, weight, bias, False, scale, shift, 4)
torch.cuda.synchronize()
print(tuple(out.shape), float(out.float().abs().mean()))
