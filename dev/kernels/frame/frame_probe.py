"""One fused-engine frame (plan conv3x3, bf16) inside cudaProfilerStart/Stop, for Nsight Compute:
the engine's plan timing and warm-up run first, outside the profiled range.
    ncu --profile-from-start off --kernel-name regex:'rgb_kernel|head_kernel|conv3x3_kernel' \
        --set full -o frame python3 dev/kernels/frame/frame_probe.py 512x512
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels
from styleforge.bench.endtoend import load_bench_style
from styleforge.engine.runner import FusedRunner
from styleforge.models.checkpoint import build_model
from styleforge.switches import Switches

ok, reason = kernels.cuda_kernels_available()
assert ok, reason
h, w = map(int, (sys.argv[1] if len(sys.argv) > 1 else "512x512").split("x"))
checkpoint, _ = load_bench_style(None)
runner = FusedRunner(build_model(checkpoint).cuda().eval(), torch.device("cuda"), torch.bfloat16,
                     settings=Switches(conv3x3="on"))
x = torch.rand(1, 3, h, w, device="cuda", generator=torch.Generator(device="cuda").manual_seed(7)) * 255
for _ in range(5):
    runner(x)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
out = runner(x)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print(tuple(out.shape), float(out.float().mean()))
