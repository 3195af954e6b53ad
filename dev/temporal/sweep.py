"""Playground (never imported): the CPU blend's settings swept on the bench's clips, per clip.

Stylizes each clip once (cached under --cache), then blends with every setting given and prints
warping error and style ratio as ratios to per-frame, as `bench --temporal` does. Settings are
`strength:detail_sigma[:scaled]`; `scaled` multiplies σ by the stylizer's stroke factor.
"""
import argparse
import pickle
import sys
from pathlib import Path

from styleforge.bench.temporal import StyleScorer, input_flows, make_clips, shot_error, stylize_frames
from styleforge.bench.temporal_options import TemporalBenchConfig
from styleforge.engine.options import StylizeOptions
from styleforge.engine.pipeline import Stylizer
from styleforge.engine.stroke import stroke_factor
from styleforge.media.flow import to_gray
from styleforge.media.flow_ahead import FlowAhead
from styleforge.media.temporal import TemporalBlender
from styleforge.media.warping_error import step_masks

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, default=960)
p.add_argument("--frames", type=int, default=16)
p.add_argument("--cache", default="/tmp/tb/sweep.pkl")
p.add_argument("settings", nargs="+")
a = p.parse_args()
cache = Path(a.cache)
if cache.exists():
    clips = pickle.loads(cache.read_bytes())
else:
    config = TemporalBenchConfig(size=a.size, frames=a.frames, speed_frames=0, output=None)
    stylizer = Stylizer(StylizeOptions(style="candy", device="cpu"))
    clips = []
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for clip in make_clips(config, Path(tmp), log=lambda m: print(m, file=sys.stderr)):
            flows = input_flows(clip.frames, 2)
            styled, _ = stylize_frames(stylizer, clip.frames)
            ahead = FlowAhead()
            pair = [ahead(i, to_gray(f)) for i, f in enumerate(clip.frames)]
            clips.append((clip.name, clip.cuts, clip.frames, styled, flows, pair))
    cache.write_bytes(pickle.dumps(clips))
scorer = StyleScorer("/work/shared/data/vgg16_relu4_3.fp16.pth", "/work/shared/data/styles/candy.jpg")
for name, cuts, frames, styled, flows, pair in clips:
    masks = step_masks(flows)
    base_w = shot_error(styled, flows, masks, cuts)
    base_s = scorer.ratio(frames, styled, 4)
    h, w = frames[0].shape[:2]
    for setting in a.settings:
        parts = setting.split(":")
        strength, sigma = float(parts[0]), float(parts[1])
        if len(parts) > 2:
            sigma *= stroke_factor(h, w, None)
        blender = TemporalBlender(strength=strength, detail_sigma=sigma)
        out = [blender.blend(c, s, f) for c, s, f in zip(frames, styled, pair)]
        we = shot_error(out, flows, masks, cuts) / base_w
        sr = scorer.ratio(frames, out, 4) / base_s - 1
        print(f"{name:16s} {setting:14s} warp {we:.3f}x style {sr:+.1%}", flush=True)
