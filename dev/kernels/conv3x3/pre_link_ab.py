"""conv3 as the residual chain's link −1 against conv3 and the chain as two launches, alone (not in
the frame): one CUDA graph of `calls` repetitions per form, replayed; per repetition both forms also
refill conv2's sums (a copy) and clear the chain's out_state, as the frame's neighbours do.
    PYTHONPATH=$PWD python3 dev/kernels/conv3x3/pre_link_ab.py [--size 256] [--links 10]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # cuda_graphs, kernel_durations
from cuda_graphs import capture
from kernel_durations import kernel_durations

from styleforge import kernels
from styleforge.kernels import reference_conv3x3 as ref
from styleforge.kernels import reference_norm_sums as sums


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256, help="conv3's input side (the frame's / 2)")
    parser.add_argument("--links", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    ok, why = kernels.cuda_kernels_available()
    assert ok, why
    g = torch.Generator().manual_seed(3)
    n, s, links, dt = 1, args.size, args.links, torch.bfloat16
    x = (torch.randn(n, 64, s, s, generator=g) * 2 + 1).to("cuda", dt).contiguous(memory_format=torch.channels_last)
    p3 = ref.pack_weight((torch.randn(128, 64, 3, 3, generator=g) / 24).to("cuda", dt))
    ws = [ref.pack_weight((torch.randn(128, 128, 3, 3, generator=g) / 34).to("cuda", dt)) for _ in range(links)]
    nws = [torch.rand(128, generator=g).cuda() + 0.5 for _ in range(links)]
    nbs = [torch.randn(128, generator=g).cuda() for _ in range(links)]
    nw2, nb2 = torch.rand(64, generator=g).cuda() + 0.5, torch.randn(64, generator=g).cuda()
    nw3, nb3 = torch.rand(128, generator=g).cuda() + 0.5, torch.randn(128, generator=g).cuda()
    filled = kernels.norm_state(n, 64, "cuda")
    sums.add_sums(filled, x)
    s2, s3, out = kernels.norm_state(n, 64, "cuda"), kernels.norm_state(n, 128, "cuda"), kernels.norm_state(n, 128, "cuda")
    chain_state = kernels.chain_state(n, links, "cuda")
    op, conv = torch.ops.styleforge.conv3x3_residual_chain, torch.ops.styleforge.conv3x3_norm

    def separate():
        s2.copy_(filled)
        out.zero_()
        c3, *_ = conv(x, p3, None, None, None, True, 1, False, nw3, nb3, 1e-5, True, 2, s3, s2, nw2, nb2, False)
        return op(c3, None, None, ws, nws, nbs, 1e-5, chain_state, s3, nw3, nb3, out)

    def fused():
        s2.copy_(filled)
        out.zero_()
        return op(x, None, None, ws, nws, nbs, 1e-5, chain_state, s3, nw3, nb3, out, p3, s2, nw2, nb2)

    a, b = separate()[0].clone(), fused()[0].clone()
    torch.cuda.synchronize()
    err = float((a.double() - b.double()).norm() / a.double().norm())
    print(f"plane {(s + 1) // 2}², {links} links: fused vs separate rel err {err:.2e}")
    graphs = {name: capture(fn, args.calls) for name, fn in (("separate", separate), ("fused", fused))}
    times = {name: [] for name in graphs}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(15):
        for name, graph in graphs.items():
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) * 1000 / args.calls)
    for name, t in times.items():
        print(f"{name}: {statistics.median(t):.2f} µs per call (median of 15 replays; min {min(t):.2f})")
    for name, fn in (("separate", separate), ("fused", fused)):
        for key in ("conv3x3_kernel", "residual_chain"):
            d = kernel_durations(fn, key, calls=10)
            d = [v for v in d if v > 3]   # (conv3x3_kernel: conv3 only; the copies are not ours)
            if d:
                print(f"{name} {key}: {statistics.median(d):.2f} µs (profiler, median of {len(d)})")


if __name__ == "__main__":
    main()
