"""Launch the InstanceNorm op on the shapes that miss their targets, for Nsight Compute.

    ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,... \
        python3 dev/kernels/instance_norm/ncu_shapes.py

Each shape runs twice (the first call builds and warms up); ncu reports per kernel launch, so
the stats / finalize / apply split of each call can be read off directly. Not a benchmark.
"""
import torch

from styleforge import kernels

SHAPES = [(1, 32, 512, 512), (1, 64, 256, 256), (1, 128, 128, 128), (1, 128, 270, 480), (1, 32, 1080, 1920)]

for shape in SHAPES:
    n, c, h, w = shape
    x = (torch.randn(shape, device="cuda") * 30 + 100).to(torch.bfloat16)
    x = x.contiguous(memory_format=torch.channels_last)
    weight, bias = torch.rand(c, device="cuda") + 0.5, torch.randn(c, device="cuda")
    for _ in range(2):
        out = kernels.instance_norm(x, weight, bias, eps=1e-5, relu=True, pad=1)
    torch.cuda.synchronize()
    print(shape, tuple(out.shape), "ok")
