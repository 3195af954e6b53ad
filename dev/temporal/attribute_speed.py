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
  graphed           --temporal with the blend replayed from a CUDA graph
                    (`versions/blend_graphed.py`: about 5 launches a frame instead of about 70;
                    each run pays its one capture, as a video would)
Per mode: frames/s, ms a frame, the process's CPU ms a frame and cores kept busy (CPU ÷ wall,
all threads), the engine thread's ms a frame inside the engine stage (issuing work) and inside
`settle` (waiting for the previous batch), and the decode workers' DIS ms a frame (summed over
threads). Reading: a mode near plain names the cost it removed; engine ms near the frame's ms
means the engine thread bounds the rate; cores near the host's count means the CPU does.

    python dev/temporal/attribute_speed.py [--size 1920] [--frames 90] [--repeats 2]
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


# mode: (strength, the decode workers' flows, the blend's __call__, the blender class)
MODES = {"plain": (0.0, None, None, TorchTemporalBlender),
         "temporal": (TEMPORAL_STRENGTH, None, None, TorchTemporalBlender),
         "no-dis": (TEMPORAL_STRENGTH, replayed_flows, None, TorchTemporalBlender),
         "no-blend": (TEMPORAL_STRENGTH, None, unblended, TorchTemporalBlender),
         "no-dis-no-blend": (TEMPORAL_STRENGTH, replayed_flows, unblended, TorchTemporalBlender),
         "graphed": (TEMPORAL_STRENGTH, None, None, GraphedTemporalBlender)}


def run(clip: Path, out: Path, stylizer, options, mode: str) -> dict:
    strength, flows, blend, blender = MODES[mode]
    FlowAhead.__call__ = timed("dis", flows or shipped_flow_call)
    TorchTemporalBlender.__call__ = blend or shipped_blend
    temporal_torch.TorchTemporalBlender = blender   # what media.video imports when it blends
    for key in timers:
        timers[key] = 0.0
    cpu = time.process_time()
    result = stylize_video(clip, out, stylizer, options, VideoOptions(temporal=strength))
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
    run(clip, out, stylizer, options, "graphed")   # the graphed path's first use, not timed
    best: dict = {}
    for _ in range(a.repeats):
        for mode in MODES:
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
