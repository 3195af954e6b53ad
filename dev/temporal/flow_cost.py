"""Playground (never imported): the blend's pair flows, cost and accuracy per setting.

Renders the bench's clips (`bench.temporal_clips`, 1920×1080 by default, the first --frames
frames), takes each frame's luma as the decode workers do, and for every candidate computes the
pair flows (forward and backward) of each step:
  dis:PRESET@SIDE[:tN][:b]
                         OpenCV DIS at PRESET on the luma shrunk to SIDE px; tN runs it under
                         cv2.setNumThreads(N) (default: OpenCV's own pool, all cores); b computes
                         the backward flow alone (VideoOptions.temporal_flow_check off), scored
                         against the reference's backward flow only
  torch@SIDE[:fF]        flow_torch's Lucas–Kanade at SIDE px on --device (fF: finest level F)
Per candidate: wall and process-CPU ms a pair (all threads: a DIS that spreads over OpenCV's
pool shows CPU > wall), and the mean end-point error, both flows, in px of a 640-px grid,
against the shipped setting (dis:fast@640) and against DIS medium at --reference px, over the
pixels that reference trusts (flow.reliable). Timing includes the shrink, as in FlowAhead.

    python dev/temporal/flow_cost.py [--size 1920] [--frames 8] [--device cpu] [candidates...]
"""
import argparse
import time

import cv2
import numpy as np
import torch
from PIL import Image

from styleforge.bench.temporal_clips import SCENES, render_scene
from styleforge.media import flow_torch
from styleforge.media.flow import dis, reliable, resize_flow, shrink, to_gray
from styleforge.media.flow_ahead import pair_flows

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, default=1920)
p.add_argument("--frames", type=int, default=8)
p.add_argument("--clips", default=",".join(SCENES))
p.add_argument("--device", default="cpu")
p.add_argument("--reference", type=int, default=960, help="DIS medium at this max side is the accuracy reference")
p.add_argument("candidates", nargs="*", default=[
    "dis:fast@640", "dis:fast@640:t1", "dis:fast@480", "dis:fast@480:t1", "dis:fast@384:t1",
    "dis:ultrafast@640:t1", "dis:ultrafast@480:t1", "dis:ultrafast@384:t1", "torch@640", "torch@480"])
a = p.parse_args()
GRID = 640
default_threads = cv2.getNumThreads()


def flows_of(candidate: str, lumas: list[np.ndarray]) -> tuple[list[np.ndarray], float, float]:
    """→ each step's (2, h, w, 2) pair flows at the 640-px grid, wall ms and CPU ms a pair."""
    kind, rest = candidate.split(":", 1) if candidate.startswith("dis:") else ("torch", candidate[len("torch@"):])
    parts = rest.split(":")
    option = parts[1] if len(parts) > 1 else ""
    out, wall, cpu = [], 0.0, 0.0
    if kind == "dis":
        preset, side = parts[0].split("@")
        threads = next((int(p[1:]) for p in parts[1:] if p.startswith("t")), default_threads)
        check = "b" not in parts[1:]
        cv2.setNumThreads(threads)
        engine = dis(preset)
        engine.calc(shrink(lumas[0], int(side)), shrink(lumas[1], int(side)), None)   # warm
        for t in range(1, len(lumas)):
            w, c = time.perf_counter(), time.process_time()
            pair = pair_flows(engine, shrink(lumas[t - 1], int(side)), shrink(lumas[t], int(side)), check)
            wall, cpu = wall + time.perf_counter() - w, cpu + time.process_time() - c
            out.append(pair)
        cv2.setNumThreads(default_threads)
    else:
        side = int(parts[0])
        settings = (flow_torch.LucasKanadeSettings(finest=int(option[1:])) if option.startswith("f")
                    else flow_torch.DEFAULT)
        device = torch.device(a.device)
        gpu = [torch.from_numpy(x).to(device) for x in lumas]
        flow_torch.pair_flows(flow_torch.shrink(gpu[0], side), flow_torch.shrink(gpu[1], side), settings)  # warm
        for t in range(1, len(lumas)):
            if device.type == "cuda":
                torch.cuda.synchronize()
            w, c = time.perf_counter(), time.process_time()
            pair = flow_torch.pair_flows(flow_torch.shrink(gpu[t - 1], side), flow_torch.shrink(gpu[t], side), settings)
            if device.type == "cuda":
                torch.cuda.synchronize()
            wall, cpu = wall + time.perf_counter() - w, cpu + time.process_time() - c
            out.append(pair.cpu().numpy())
    steps = len(lumas) - 1
    return [on_grid(f) for f in out], 1e3 * wall / steps, 1e3 * cpu / steps


def on_grid(pair: np.ndarray) -> np.ndarray:
    size = flow_torch.flow_size(*lumas_shape, GRID)
    return np.stack([resize_flow(np.ascontiguousarray(f), size) for f in pair])


def epe(flows, truth, masks) -> float:
    # A backward-only candidate (1 flow) is scored on the backward flow (the stacks' last).
    errors = [np.sqrt(((f - g[-len(f):]) ** 2).sum(-1))[m[-len(f):]].mean() for f, g, m in zip(flows, truth, masks)]
    return float(np.mean(errors))


photos = [np.asarray(Image.open(f"styleforge/assets/{n}.jpg").convert("RGB"))
          for n in ("chelsea", "coffee", "astronaut")]
size = (round(a.size * 9 / 16 / 2) * 2, a.size // 2 * 2)
lumas_shape = size
print(f"{a.size}x{size[0]}, {a.frames} frames, cv2 {cv2.__version__} ({default_threads} threads), "
      f"torch {torch.__version__} on {a.device}; EPE in px of a {GRID}-px grid")
print("| clip | candidate | wall ms a pair | CPU ms a pair | EPE vs dis:fast@640 | EPE vs medium@%d |" % a.reference)
print("|---|---|---:|---:|---:|---:|")
for scene in a.clips.split(","):
    frames = render_scene(scene, photos, size, a.frames, cut_at=a.frames // 2)
    lumas = [to_gray(f) for f in frames]
    reference, _, _ = flows_of(f"dis:medium@{a.reference}", lumas)
    masks = [np.stack([reliable(f[1], f[0]), reliable(f[0], f[1])]) for f in reference]   # each flow's own start frame
    if scene == "cut":   # the step across the cut has no true flow
        del reference[a.frames // 2 - 1], masks[a.frames // 2 - 1]
    shipped = None
    for candidate in dict.fromkeys(["dis:fast@640", *a.candidates]):
        flows, wall, cpu = flows_of(candidate, lumas)
        if scene == "cut":
            del flows[a.frames // 2 - 1]
        shipped = flows if candidate == "dis:fast@640" else shipped
        print(f"| {scene} | {candidate} | {wall:.1f} | {cpu:.1f} | {epe(flows, shipped, masks):.3f} | "
              f"{epe(flows, reference, masks):.3f} |", flush=True)
