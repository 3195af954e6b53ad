"""Playground (never imported): torch.profiler over one steady-state blend call, the shipped blend
against its CUDA-graph version (`versions/blend_graphed.py`; eager on the CPU) and its blurs as
convolutions (`versions/blend_conv.py`, the blurs before `band_blur`), at 1080p and 4K on the
CPU (or --device cuda).

A pan over a shipped photo, a stand-in stylization with stroke-scale texture, flows from
`FlowAhead` at 640 px, the stroke factor of the auto stroke scale at that size. Prints per
version and size: top-level torch ops issued, views left out (≈ kernel launches on CUDA), the profiler's FLOP
count (convolutions and matmuls only), the MB of full-size tensors the ops write, the wall ms
of the profiled call, the costliest ops, and how far its frame is from the first version's.

    python dev/temporal/profile_blend.py [--sizes 1080,2160] [--versions new,conv,graphed] [--device cpu]
"""
import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import torch
from PIL import Image
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).parent / "versions"))
from blend_conv import ConvTemporalBlender  # noqa: E402
from blend_graphed import GraphedTemporalBlender  # noqa: E402

from styleforge.engine.stroke import stroke_factor  # noqa: E402
from styleforge.media.flow import to_gray  # noqa: E402
from styleforge.media.flow_ahead import FlowAhead  # noqa: E402
from styleforge.media.temporal_torch import TorchTemporalBlender  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--sizes", default="1080,2160")
p.add_argument("--versions", default="new,graphed")
p.add_argument("--device", default="cpu")
p.add_argument("--top", type=int, default=6)
p.add_argument("--list", action="store_true", help="print every op issued, in order")
p.add_argument("--repeat", type=int, default=0, help="timed calls without the profiler (0: none)")
a = p.parse_args()
torch.set_grad_enabled(False)
device = torch.device(a.device)
photo = np.asarray(Image.open(Path(__file__).parents[2] / "styleforge/assets/chelsea.jpg").convert("RGB"))


def pan(height: int) -> tuple[list, list, list]:
    width = height * 16 // 9
    big = cv2.resize(photo, (width + 8, height + 8), interpolation=cv2.INTER_CUBIC)
    frames = [cv2.warpAffine(big, np.float32([[1, 0, -1.3 * t], [0, 1, -0.4 * t]]), (width, height))
              for t in range(4)]
    rng = np.random.default_rng(0)
    styled = []
    for f in frames:
        small = rng.normal(0, 60, (height // 8, width // 8, 3)).astype(np.float32)
        noise = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
        styled.append(np.clip(f * 0.8 + noise + 20, 0, 255).astype(np.uint8))
    ahead = FlowAhead()
    flows = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
    to = lambda x: torch.from_numpy(x).permute(2, 0, 1).float().to(device)   # noqa: E731
    uploaded = [None] + [torch.from_numpy(f).to(device) for f in flows[1:]]
    return [to(f) for f in frames], [to(s) for s in styled], uploaded


VIEWS = {"select", "unsqueeze", "view", "expand", "slice", "permute", "reshape", "as_strided", "t",
         "detach", "alias", "unbind", "_unsafe_view", "squeeze", "lift_fresh", "empty", "contiguous", "numel", "item"}


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


for height in map(int, a.sizes.split(",")):
    content, styled, flows = pan(height)
    factor = stroke_factor(height, height * 16 // 9, None)
    first = None
    for version in a.versions.split(","):
        kind = {"graphed": GraphedTemporalBlender, "conv": ConvTemporalBlender}.get(version, TorchTemporalBlender)
        blender = kind(stroke_factor=factor, device=device)
        for t in range(3):   # warm: the timed call is a steady-state frame (the graph captured at t = 2)
            blender(content[t], styled[t], flows[t])
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        sync()
        with profile(activities=activities, with_flops=True, record_shapes=True) as prof:
            start = time.perf_counter()
            frame = blender(content[3], styled[3], flows[3])
            sync()
            ms = (time.perf_counter() - start) * 1e3
        first = frame if first is None else first
        gap = (frame - first).abs()
        events = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")
                  and e.name.removeprefix("aten::") not in VIEWS]
        full = height * (height * 16 // 9)
        written = sum(4 * np.prod(s[0]) for e in events for s in [e.input_shapes] if s and s[0]
                      and len(s[0]) >= 2 and np.prod(s[0]) >= full) / 2**20
        flops = sum(e.flops or 0 for e in prof.events())
        names = Counter(e.name for e in events)
        if a.list:
            print("     issued: " + " ".join(e.name.removeprefix("aten::") for e in events))
        costly = sorted(prof.key_averages(), key=lambda k: -k.self_cpu_time_total)[:a.top]
        print(f"{version:4s} {height}p factor {factor:.2f}: {len(events)} ops (no views), {flops / 1e9:.2f} GFLOP "
              f"(conv), {written:.0f} MB of full-size inputs read, {ms:.0f} ms wall; "
              f"|frame − {a.versions.split(',')[0]}| "
              f"max {gap.max():.0f} mean {gap.mean():.4f} levels")
        print("     most issued: " + ", ".join(f"{n.removeprefix('aten::')}×{c}" for n, c in names.most_common(8)))
        print("     costliest (self CPU ms): " + ", ".join(
            f"{k.key.removeprefix('aten::')} {k.self_cpu_time_total / 1e3:.0f}" for k in costly), flush=True)
        if device.type == "cuda":
            kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            gpu = sorted(prof.key_averages(), key=lambda k: -k.self_device_time_total)[:a.top]
            print(f"     CUDA: {len(kernels)} kernels, {sum(e.device_time for e in kernels) / 1e3:.2f} ms of GPU time; "
                  + ", ".join(f"{k.key[:40]} {k.self_device_time_total / 1e3:.2f}" for k in gpu))
        if a.repeat:
            sync()
            start = time.perf_counter()
            for _ in range(a.repeat):
                blender(content[3], styled[3], flows[3])
            sync()
            print(f"     {(time.perf_counter() - start) * 1e3 / a.repeat:.2f} ms per blend (mean of {a.repeat})",
                  flush=True)
