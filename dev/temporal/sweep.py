"""Playground (never imported): blend settings swept on the bench's five clips, per clip.

Stylizes each clip once (cached under --cache), then blends with every setting given and prints
warping error and style ratio as ratios to per-frame, as `bench --temporal` does. A setting is
`key=value,...` with keys
  a      strength α (0.8)             s      detail_sigma at the network's scale (1; ×stroke factor)
  px     detail σ in output px instead of s
  hi     strength of the band finer than σ (0: the shipped blend keeps it the current frame's)
  var    1: restore the current frame's local energy of the band finer than `vb`×σ after the
         blend (energy window `vr`×σ)
  preset DIS preset of the blend's flows (medium)   one   1: backward flow only (no fwd–bwd test)
  fs     the flows' size, longer side in px (640)     flow  dis (default) or torch (flow_torch's LK)
  check  0: the backward flow alone (TemporalSettings.flow_check off; also for ship=1)
  fwd    PRESET@SIDE: the forward flow (the forward–backward test's only use of it) at another
         DIS preset and size than the backward one, resized to its grid (a prototype)
  ship   1: the shipped TemporalBlender as it is (only a, s, vb, vr, preset, check, ut apply; vb,
         vr as restore_scale, restore_window, default 8 and 2)
  ut     with ship=1: unchecked_trust, α's share with the backward flow alone (default: shipped)
  torch  1 with ship=1: the shipped TorchTemporalBlender on the CPU instead (its pyramid blurs)
The prototypes here use the shipped blender's trust masks; a winner moves into both blenders.
With --device cuda the stylization (the engine the video path uses), the torch blends and the
style scorer run on the GPU, so `ship=1,torch=1` settings give what `bench --temporal` gives
there; --cache "" keeps nothing (1080p clips pickle to gigabytes).
"""
import argparse
import os
import pickle
import sys
from pathlib import Path

import cv2
import numpy as np
import torch

from styleforge.bench.temporal import StyleScorer, input_flows, make_clips, shot_error, stylize_frames
from styleforge.bench.temporal_options import TemporalBenchConfig
from styleforge.engine.stroke import stroke_factor
from styleforge.media.flow import inside, motion_boundary, resize_flow, to_gray, warp
from styleforge.media.flow_ahead import FlowAhead
from styleforge.media.flow_torch import DeviceFlows
from styleforge.media.temporal import TemporalBlender
from styleforge.media.temporal_torch import TorchTemporalBlender
from styleforge.media.warping_error import step_masks

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, default=960)
p.add_argument("--frames", type=int, default=16)
p.add_argument("--cache", default="/tmp/tb/sweep.pkl")
p.add_argument("--clips", default="", help="comma-separated clip-name prefixes (default: all)")
p.add_argument("--device", default="cpu")
p.add_argument("--vgg-weights", default="/work/shared/data/vgg16_relu4_3.fp16.pth")
p.add_argument("--painting", default="/work/shared/data/styles/candy.jpg")
p.add_argument("settings", nargs="+")
a = p.parse_args()
cache = Path(a.cache)
if a.cache and cache.exists():
    clips = pickle.loads(cache.read_bytes())
else:
    from styleforge.engine.options import StylizeOptions
    from styleforge.engine.pipeline import Stylizer
    scenes = {"scenes": tuple(a.clips.split(","))} if a.clips else {}   # clip names start with their scene
    # Rendered as long as the bench renders them (its speed_frames, 90): a pan's canvas and the
    # cut's second shot depend on the clip's length, so 24-frame renderings are other clips.
    length = max(a.frames, TemporalBenchConfig().speed_frames)
    config = TemporalBenchConfig(size=a.size, frames=a.frames, speed_frames=length, output=None, **scenes)
    stylizer = Stylizer(StylizeOptions(style="candy", device=a.device))
    clips = []
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for clip in make_clips(config, Path(tmp), log=lambda m: print(m, file=sys.stderr)):
            flows = input_flows(clip.frames, os.cpu_count() or 1)
            styled, _ = stylize_frames(stylizer, clip.frames)
            ahead = FlowAhead()
            pair = [ahead(i, to_gray(f)) for i, f in enumerate(clip.frames)]
            clips.append((clip.name, clip.cuts, clip.frames, styled, flows, pair))
    if a.cache:
        cache.write_bytes(pickle.dumps(clips))
if a.clips:
    clips = [c for c in clips if c[0].startswith(tuple(a.clips.split(",")))]


def parse(setting: str) -> dict:
    out = dict(a=0.8, s=1.0, px=None, hi=0.0, var=0, vr=2.0, vb=1.0, preset="medium", one=0, ship=0, torch=0,
               fs=640, flow="dis", check=1, fwd="", ut=None)
    for item in filter(None, setting.split(",")):
        key, value = item.split("=")
        out[key] = value if key in ("preset", "flow", "fwd") else float(value)
    return out


def dis_flows(frames, o: dict) -> list:
    """The decode workers' pair flows for setting `o`: `FlowAhead` at its preset and size, the
    backward flow alone with check=0, or with fwd=PRESET@SIDE the forward flow from a second
    `FlowAhead` at that setting, resized to the backward flow's grid."""
    ahead = FlowAhead(o["preset"], int(o["fs"]), check=bool(o["check"]) and not o["fwd"])
    flows = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
    if not o["fwd"]:
        return flows
    preset, side = o["fwd"].split("@")
    cheap = FlowAhead(preset, int(side))
    forwards = [cheap(i, to_gray(f)) for i, f in enumerate(frames)]
    return [None if b is None else np.stack([resize_flow(np.ascontiguousarray(f[0]), b.shape[1:3]), b[-1]])
            for b, f in zip(flows, forwards)]


class Prototype(TemporalBlender):
    """The shipped blender with the sweep's options in its blend."""

    def configure(self, o: dict, sigma_px: float):
        self.o, self.sigma_px = o, sigma_px
        return self

    def trust(self, content, previous, flows):
        if not self.o["one"]:
            return super().trust(content, previous, flows)
        backward = resize_flow(flows[-1].copy(), content.shape[:2])
        trusted = ~motion_boundary(backward) & inside(backward)
        difference = np.abs(content.astype(np.int16) - warp(previous, backward).astype(np.int16)).max(-1)
        trusted &= difference <= self.photometric_tolerance
        mask = trusted.astype(np.float32)
        size = 2 * self.feather + 1
        mask = cv2.erode(mask, np.ones((size, size), np.uint8))
        return backward, cv2.GaussianBlur(mask, (size, size), 0)

    def blend(self, content, stylized, flows):
        current = stylized.astype(np.float32)
        if flows is None or self._content is None:
            return self._keep(content, current)
        backward, mask = self.trust(content, self._content, flows)
        if 1.0 - float(mask.mean()) > self.scene_cut:
            self.restarts += 1
            return self._keep(content, current)
        o, sigma = self.o, self.sigma_px
        size = round(sigma * 8 + 1) | 1
        low = lambda x: cv2.GaussianBlur(x, (size, size), sigma)
        change = warp(self._output, backward, cv2.INTER_CUBIC) - current
        smooth = low(change)
        m = mask[..., None]
        blended = current + self.strength * m * smooth + o["hi"] * m * (change - smooth)
        if o["var"]:
            vs = o["vr"] * sigma
            vsize = round(vs * 8 + 1) | 1
            energy = lambda x: cv2.GaussianBlur((x - low(x)) ** 2, (vsize, vsize), vs).sum(-1, keepdims=True)
            bs = o["vb"] * sigma
            bsize = round(bs * 8 + 1) | 1
            base_of = lambda x: cv2.GaussianBlur(x, (bsize, bsize), bs)
            energy = lambda x: cv2.GaussianBlur((x - base_of(x)) ** 2, (vsize, vsize), vs).sum(-1, keepdims=True)
            base = base_of(blended)
            gain = np.sqrt((energy(current) + 1.0) / (energy(blended) + 1.0))
            blended = base + np.clip(gain, 1.0, 2.0) * (blended - base)
        return self._keep(content, np.clip(blended, 0.0, 255.0))


class TorchBlend:
    """The torch blender behind TemporalBlender.blend's uint8 (H, W, 3) interface."""

    def __init__(self, blender):
        self.blender = blender

    def blend(self, content, stylized, flows):
        chw = lambda x: torch.from_numpy(x).permute(2, 0, 1).float().to(a.device)   # noqa: E731
        with torch.no_grad():
            out = self.blender(chw(content), chw(stylized), None if flows is None else torch.from_numpy(flows))
        return out.permute(1, 2, 0).to(torch.uint8).cpu().numpy()


scorer = StyleScorer(a.vgg_weights, a.painting, a.device)
preset_flows: dict = {}
for name, cuts, frames, styled, flows, pair in clips:
    masks = step_masks(flows)
    base_w = shot_error(styled, flows, masks, cuts)
    base_s = scorer.ratio(frames, styled, 4)
    h, w = frames[0].shape[:2]
    factor = stroke_factor(h, w, None)
    for setting in a.settings:
        o = parse(setting)
        if o["flow"] == "torch":
            key = (name, "torch", int(o["fs"]))
            if key not in preset_flows:
                device_flows = DeviceFlows(int(o["fs"]))
                with torch.no_grad():
                    preset_flows[key] = [flow if flow is None else flow.cpu().numpy() for flow in
                                         (device_flows(i, torch.from_numpy(f).to(a.device).permute(2, 0, 1))
                                          for i, f in enumerate(frames))]
            use = preset_flows[key]
        elif o["preset"] != "medium" or o["fs"] != 640 or not o["check"] or o["fwd"]:
            key = (name, o["preset"], int(o["fs"]), int(o["check"]), o["fwd"])
            if key not in preset_flows:
                preset_flows[key] = dis_flows(frames, o)
            use = preset_flows[key]
        else:
            use = pair
        if o["ship"]:
            restore = dict(restore_scale=o["vb"] if "vb=" in setting else 8.0, restore_window=o["vr"])
            if o["ut"] is not None:
                restore["unchecked_trust"] = o["ut"]
            blender = TemporalBlender(strength=o["a"], detail_sigma=o["s"], stroke_factor=factor, **restore)
            if o["torch"]:
                blender = TorchBlend(TorchTemporalBlender(strength=o["a"], detail_sigma=o["s"], device=a.device,
                                                          stroke_factor=factor, **restore))
        else:
            sigma = o["px"] if o["px"] else o["s"] * factor
            blender = Prototype(strength=o["a"]).configure(o, sigma)
        out = [blender.blend(c, s, f) for c, s, f in zip(frames, styled, use)]
        we = shot_error(out, flows, masks, cuts) / base_w
        sr = scorer.ratio(frames, out, 4) / base_s - 1
        ok = "ok" if we <= 0.6 and abs(sr) <= 0.1 else "--"
        print(f"{name:16s} {setting:34s} warp {we:.3f}x style {sr:+6.1%} {ok}", flush=True)
