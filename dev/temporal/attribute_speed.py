"""Playground (never imported): where `--temporal`'s extra time per frame goes in the video path.

One generated pan clip (H.264 + AAC, `bench.temporal_clips`) through `stylize_video` on CUDA in
five modes, alternated, best of --repeats after a warm-up:
  plain             no --temporal
  temporal          as shipped
  no-dis            --temporal with each frame's pair flows replayed from a first run (the
                    decode workers do no DIS: what the flows' CPU time costs)
  no-blend          --temporal whose blend returns the stylized frame as it is (flows computed
                    and uploaded: what the blend costs the engine thread and the GPU)
  no-dis-no-blend   both (what is left: the flows' staging and upload)
  dis-t1, dis-fast480-t1, dis-ultrafast640-t1, dis-ultrafast480-t1
                    --temporal with the DIS flows' options (VideoOptions.temporal_flow_*): t1 is
                    OpenCV held to one thread (its pool otherwise competes with the workers)
  backward-only     --temporal with the backward flow alone (VideoOptions.temporal_flow_check
                    off: half the DIS per frame, no forward–backward test)
  torch-flow, torch-flow480
                    --temporal with the flows on the GPU (flow_torch, in the engine stage: no DIS)
  graphed           --temporal with the blend replayed from a CUDA graph
                    (`versions/blend_graphed.py`: about 5 launches a frame instead of about 70;
                    each run pays its one capture, as a video would)
Per mode: frames/s, ms a frame, the process's CPU ms a frame and cores kept busy (CPU ÷ wall,
all threads), the engine thread's ms a frame inside the engine stage (issuing work) and inside
`settle` (waiting for the previous batch), and the decode workers' DIS ms a frame (summed over
threads). Reading: a mode near plain names the cost it removed; engine ms near the frame's ms
means the engine thread bounds the rate; cores near the host's count means the CPU does.

    python dev/temporal/attribute_speed.py [--size 1920] [--frames 90] [--repeats 2] [--modes plain,...]
"""
import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

import styleforge.media.temporal_torch as temporal_torch
from styleforge.bench.temporal_clips import render_scene, write_clip
from styleforge.engine.options import StylizeOptions
from styleforge.engine.pipeline import Stylizer
from styleforge.media.engine_stage import EngineStage
from styleforge.media.flow_ahead import FlowAhead
from styleforge.media.options import TEMPORAL_STRENGTH, VideoOptions
from styleforge.media.temporal_torch import TorchTemporalBlender
from styleforge.media.video import stylize_video

sys.path.insert(0, str(Path(__file__).parent / "versions"))
from blend_graphed import GraphedTemporalBlender  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, default=1920, help="frame width (16:9)")
p.add_argument("--frames", type=int, default=90)
p.add_argument("--repeats", type=int, default=2)
p.add_argument("--style", default="candy")
p.add_argument("--modes", default=",".join(("plain", "temporal", "no-dis", "no-blend", "no-dis-no-blend",
                                                            "graphed")),
               help="comma list; the flow options' modes: dis-t1, dis-fast480-t1, dis-ultrafast640-t1, "
                    "dis-ultrafast480-t1, backward-only, torch-flow, torch-flow480")
p.add_argument("--device", default="cuda", help="cpu only smoke-tests this script: the CPU path has no FlowAhead")
a = p.parse_args()

timers = {"engine": 0.0, "settle": 0.0, "dis": 0.0}
lock = threading.Lock()


def timed(name, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with lock:
                timers[name] += time.perf_counter() - start
    return wrapper


EngineStage.__call__ = timed("engine", EngineStage.__call__)
EngineStage._settle = timed("settle", EngineStage._settle)
shipped_flow_call, shipped_blend = FlowAhead.__call__, TorchTemporalBlender.__call__
recorded: dict = {}


def recording_flows(self, index, luma):
    flow = shipped_flow_call(self, index, luma)
    recorded[index] = flow
    return flow


def replayed_flows(self, index, luma):
    return recorded[index]


def unblended(self, content, stylized, flows):
    return stylized.round().clamp_(0.0, 255.0)


# mode: (strength, the decode workers' flows, the blend's __call__, the blender class, VideoOptions
# fields: the flow's backend, DIS preset, size and OpenCV threads)
T, B = TEMPORAL_STRENGTH, TorchTemporalBlender
MODES = {"plain": (0.0, None, None, B, {}),
         "temporal": (T, None, None, B, {}),
         "no-dis": (T, replayed_flows, None, B, {}),
         "no-blend": (T, None, unblended, B, {}),
         "no-dis-no-blend": (T, replayed_flows, unblended, B, {}),
         "graphed": (T, None, None, GraphedTemporalBlender, {}),
         "dis-t1": (T, None, None, B, {"temporal_flow_threads": 1}),
         "dis-fast480-t1": (T, None, None, B, {"temporal_flow_size": 480, "temporal_flow_threads": 1}),
         "dis-ultrafast640-t1": (T, None, None, B, {"temporal_flow_preset": "ultrafast", "temporal_flow_threads": 1}),
         "dis-ultrafast480-t1": (T, None, None, B, {"temporal_flow_preset": "ultrafast", "temporal_flow_size": 480,
                                                    "temporal_flow_threads": 1}),
         "backward-only": (T, None, None, B, {"temporal_flow_check": False}),
         "torch-flow": (T, None, None, B, {"temporal_flow": "torch"}),
         "torch-flow480": (T, None, None, B, {"temporal_flow": "torch", "temporal_flow_size": 480})}


def run(clip: Path, out: Path, stylizer, options, mode: str) -> dict:
    strength, flows, blend, blender, flow_options = MODES[mode]
    FlowAhead.__call__ = timed("dis", flows or shipped_flow_call)
    TorchTemporalBlender.__call__ = blend or shipped_blend
    temporal_torch.TorchTemporalBlender = blender   # what media.video imports when it blends
    for key in timers:
        timers[key] = 0.0
    cpu = time.process_time()
    result = stylize_video(clip, out, stylizer, options, VideoOptions(temporal=strength, **flow_options))
    cpu = time.process_time() - cpu
    n = result.frames
    return {"fps": result.fps, "ms": 1e3 * result.seconds / n, "cpu_ms": 1e3 * cpu / n,
            "cores": cpu / result.seconds, **{f"{k}_ms": 1e3 * v / n for k, v in timers.items()}}


photos = [np.asarray(Image.open(f"styleforge/assets/{n}.jpg").convert("RGB"))
          for n in ("chelsea", "coffee", "astronaut")]
size = (round(a.size * 9 / 16 / 2) * 2, a.size // 2 * 2)
options = StylizeOptions(style=a.style, device=a.device, overwrite=True)
stylizer = Stylizer(options)
name = torch.cuda.get_device_name() if a.device == "cuda" else a.device
print(f"{name}, torch {torch.__version__}, {os.cpu_count()} CPUs, "
      f"{size[1]}x{size[0]}, {a.frames} frames", flush=True)
with tempfile.TemporaryDirectory(prefix="sf-attribute-") as tmp:
    clip = write_clip(Path(tmp) / "pan.mp4", render_scene("pan", photos, size, a.frames))
    out = Path(tmp) / "out.mp4"
    FlowAhead.__call__ = recording_flows   # the replayed flows, and the warm-up of both paths
    stylize_video(clip, out, stylizer, options, VideoOptions(temporal=TEMPORAL_STRENGTH))
    stylize_video(clip, out, stylizer, options, VideoOptions())
    modes = a.modes.split(",")
    unknown = set(modes) - set(MODES)
    if unknown or "plain" not in modes:
        raise SystemExit(f"--modes: unknown {sorted(unknown)} (plain is required: the rows are relative to it)")
    for mode in ("graphed", "torch-flow"):   # first uses (a capture, the flow's per-shape constants), not timed
        if mode in modes:
            run(clip, out, stylizer, options, mode)
    best: dict = {}
    for _ in range(a.repeats):
        for mode in modes:
            row = run(clip, out, stylizer, options, mode)
            if mode not in best or row["fps"] > best[mode]["fps"]:
                best[mode] = row
    plain = best["plain"]["ms"]
    print("| mode | frames/s | ms a frame | vs plain ms | CPU ms a frame | cores busy | engine ms | settle ms "
          "| DIS ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, r in best.items():
        print(f"| {mode} | {r['fps']:.1f} | {r['ms']:.2f} | {r['ms'] - plain:+.2f} | {r['cpu_ms']:.1f} | "
              f"{r['cores']:.1f} | {r['engine_ms']:.2f} | {r['settle_ms']:.2f} | {r['dis_ms']:.1f} |", flush=True)
