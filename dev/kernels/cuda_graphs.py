"""Shared by the dev scripts that time or profile CUDA graphs: a graph of repeated calls, and the
engine's fused runner warmed up on a seeded frame."""
from __future__ import annotations

import torch


def capture(fn, calls: int, warmups: int = 3) -> torch.cuda.CUDAGraph:
    """fn called `warmups` times on a side stream (as torch.cuda.graphs prescribes), then `calls`
    times captured in one graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return graph


def warm_runner(h: int, w: int, dtype, warmups: int = 5):
    """The bench style's FusedRunner on CUDA and a seeded (1, 3, h, w) frame in 0–255, after
    `warmups` calls (its graphs captured, its plan chosen)."""
    from styleforge.bench.endtoend import load_bench_style
    from styleforge.engine.runner import FusedRunner
    from styleforge.models.checkpoint import build_model

    checkpoint, _ = load_bench_style(None)
    runner = FusedRunner(build_model(checkpoint).cuda().eval(), torch.device("cuda"), dtype)
    x = torch.rand(1, 3, h, w, device="cuda", generator=torch.Generator(device="cuda").manual_seed(7)) * 255
    for _ in range(warmups):
        runner(x)
    torch.cuda.synchronize()
    return runner, x
