"""Playground (never imported): blend prototypes scored on `clip_cache`'s stylized clips.

    python dev/temporal/blend_lab.py out/cache1080 "s=0.85,vr=1" "s=0.8,vr=0.5,mid=1" ...

Each setting is `key=value,...` over the shipped blender's options (a strength, s detail_sigma,
vr restore_window, vb restore_scale; unset: the shipped defaults; g MAX_GAIN) and the prototypes':
  mid  1: the restore scales only the band between σ and vb·σ (the averaged one), measured
       against the current frame's energy in that band; the band finer than σ, the current
       frame's own, is left as it is
  hi   strength of the band finer than σ (the shipped blend: 0, the current frame's alone)
  bt   with hi: the fine band's weight falls as exp(−|Δ|²/bt²), Δ its difference (levels)
  lz   1: the carried frame is warped with Lanczos-4 instead of bicubic
  ship 1: the shipped TemporalBlender as it is (a, s, vr, vb, check, pt, ut only)
  torch 1 with ship=1: the shipped TorchTemporalBlender on the CPU instead (its pyramid blurs),
       as the device's bench blends
  check 0: the backward flow alone (TemporalSettings.flow_check off: no forward–backward test)
  pt   the photometric tolerance (levels, 0–255)
  ut   unchecked_trust: α's share with check=0 (shipped: 8/9; 1: α as given)
  nr   τ in px²: the trust mask scaled by 1 / (1 + δ²/τ), δ² = G_w * |ΔI|² / (G_w * |∇I|² + 0.5) the
       inputs' local misalignment after the warp (ΔI = I_t − warp(I_{t−1}), summed over channels)
  nw   × σ: that window w (1)
Prints warping error and style ratio as ratios to per-frame per clip, as `bench --temporal`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clip_cache import load  # noqa: E402

from styleforge.bench.temporal import StyleScorer, shot_error  # noqa: E402
from styleforge.engine.stroke import stroke_factor  # noqa: E402
from styleforge.media.flow import warp  # noqa: E402
from styleforge.media.temporal import TemporalBlender, TemporalSettings  # noqa: E402
from styleforge.media.temporal_torch import TorchTemporalBlender  # noqa: E402

SHIPPED = TemporalSettings()
DEFAULTS = dict(a=SHIPPED.strength, s=SHIPPED.detail_sigma, vr=SHIPPED.restore_window, vb=SHIPPED.restore_scale,
                g=2.0, mid=0, lz=0, ship=0, torch=0, hi=0.0, bt=0.0, check=1, nr=0.0, nw=1.0,
                ut=SHIPPED.unchecked_trust, pt=SHIPPED.photometric_tolerance)


def parse(setting: str) -> dict:
    out = dict(DEFAULTS)
    for item in filter(None, setting.split(",")):
        key, value = item.split("=")
        out[key] = float(value)
    return out


class TorchBlend:
    """The shipped torch blender behind TemporalBlender.blend's uint8 (H, W, 3) interface."""

    def __init__(self, **settings):
        self.blender = TorchTemporalBlender(**settings)

    @property
    def restarts(self):
        return self.blender.restarts

    def blend(self, content, stylized, flows):
        chw = lambda x: torch.from_numpy(x).permute(2, 0, 1).float()   # noqa: E731
        with torch.no_grad():
            out = self.blender(chw(content), chw(stylized), None if flows is None else torch.from_numpy(flows))
        return out.permute(1, 2, 0).to(torch.uint8).numpy()


def gauss(x, sigma):
    size = round(sigma * 8 + 1) | 1
    return cv2.GaussianBlur(x, (size, size), sigma)


class Lab(TemporalBlender):
    """The shipped OpenCV blend with the prototypes' options."""

    def configure(self, o: dict):
        self.o = o
        return self

    def blend(self, content, stylized, flows):
        current = stylized.astype(np.float32)
        if flows is None or self._content is None:
            return self._keep(content, current)
        backward, mask = self.trust(content, self._content, flows)
        self.trusted_fraction = float(mask.mean())
        if 1.0 - self.trusted_fraction > self.scene_cut:
            self.restarts += 1
            return self._keep(content, current)
        o, sigma = self.o, self.detail_px()
        if o["nr"]:
            now = content.astype(np.float32)
            residual = ((now - warp(self._content, backward).astype(np.float32)) ** 2).sum(-1)
            gradient = sum((cv2.Sobel(now, cv2.CV_32F, *d, ksize=3) / 8) ** 2 for d in ((1, 0), (0, 1))).sum(-1)
            w = o["nw"] * sigma
            shift = gauss(residual, w) / (gauss(gradient, w) + 0.5)
            mask = mask / (1.0 + shift / o["nr"])
        carried = warp(self._output, backward, cv2.INTER_LANCZOS4 if o["lz"] else cv2.INTER_CUBIC)
        full = carried - current
        change = gauss(full, sigma)
        blended = current + (self.strength * mask)[..., None] * change
        if o["hi"]:
            top = full - change
            weight = o["hi"] * mask
            if o["bt"]:   # a temporal bilateral: carry the fine band only where it nearly agrees
                weight = weight * np.exp(-(top * top).sum(-1) / o["bt"] ** 2)
            blended += weight[..., None] * top
        band, window = o["vb"] * sigma, o["vr"] * sigma
        if o["mid"]:
            def split(x):
                low, base = gauss(x, sigma), gauss(x, band)
                mid = low - base
                return x - low, mid, base, gauss((mid * mid).sum(-1), window)
            _, _, _, e_cur = split(current)
            top, mid, base, e_bl = split(blended)
            gain = np.clip(np.sqrt((e_cur + 1.0) / (e_bl + 1.0)), 1.0, o["g"])
            blended = base + top + gain[..., None] * mid
        else:
            def split(x):
                base = gauss(x, band)
                fine = x - base
                return base, fine, gauss((fine * fine).sum(-1), window)
            _, _, e_cur = split(current)
            base, fine, e_bl = split(blended)
            gain = np.clip(np.sqrt((e_cur + 1.0) / (e_bl + 1.0)), 1.0, o["g"])
            blended = base + gain[..., None] * fine
        return self._keep(content, np.clip(blended, 0.0, 255.0))


def main():
    import argparse
    p = argparse.ArgumentParser(description="blend prototypes on cached clips (see the docstring)")
    p.add_argument("root", type=Path, help="a clip_cache folder")
    p.add_argument("settings", nargs="+", help="key=value,... settings; a word without '=' picks clips by prefix")
    p.add_argument("--device", default="cpu", help="the style scorer's device")
    p.add_argument("--vgg-weights", default="/work/shared/data/vgg16_relu4_3.fp16.pth")
    p.add_argument("--painting", default="/work/shared/data/styles/candy.jpg")
    a = p.parse_args()
    prefixes = tuple(s for s in a.settings if "=" not in s)
    settings = [s for s in a.settings if "=" in s]
    scorer = StyleScorer(a.vgg_weights, a.painting, a.device)
    for name, cuts, frames, styled, flows, masks, pair in load(a.root, prefixes):
        base_w = shot_error(styled, flows, masks, cuts)
        base_s = scorer.ratio(frames, styled, 4)
        factor = stroke_factor(*styled[0].shape[:2], None)
        for setting in settings:
            o = parse(setting)
            kw = dict(strength=o["a"], detail_sigma=o["s"], stroke_factor=factor, restore_scale=o["vb"],
                      restore_window=o["vr"], photometric_tolerance=o["pt"], unchecked_trust=o["ut"])
            if o["ship"]:
                blender = TorchBlend(**kw) if o["torch"] else TemporalBlender(**kw)
            else:
                blender = Lab(**kw).configure(o)
            use = pair if o["check"] else [f if f is None else np.ascontiguousarray(f[-1:]) for f in pair]
            out = [blender.blend(c, s, f) for c, s, f in zip(frames, styled, use)]
            we = shot_error(out, flows, masks, cuts) / base_w
            sr = scorer.ratio(frames, out, 4) / base_s - 1
            ok = "ok" if we <= 0.6 and abs(sr) <= 0.1 else "--"
            print(f"{name:18s} {setting:36s} warp {we:.3f}x style {sr:+6.1%} {ok} restarts {blender.restarts}",
                  flush=True)


if __name__ == "__main__":
    main()
