"""Temporal-consistency benchmark, clip by clip: per-frame stylization against `--temporal` (and a
stability-trained style, alone and with it) — warping error, style ratio and the video path's
frames/s, each as a ratio to per-frame on the same clip.

Clips: five scenes made from still photos at run time (`temporal_clips`: pan, zoom, a moving
subject, rotation, a scene cut) written as H.264 + AAC at `size` (1080p by default; the pan at
4K too with `speed_4k`), plus any real videos given. Per clip the first `frames` frames, decoded
from the file as the video path decodes them, are stylized one by one and blended as the video
path blends them (on CUDA `TorchTemporalBlender` with the flows of `FlowAhead`; on the CPU the
OpenCV blender), then scored. Warping error: Lai et al. 2018 (`media/warping_error.py`) with
DIS flow at full size on the inputs, over the steps within shots (the step across a cut is
left out). Style ratio: the project's scoring (shared
`style_metrics.py`, re-implemented here on the library's VGG16): frames at 512 px on the longer
side, Σ over relu1_2…relu4_3 of the summed squared Gram difference (Grams ÷ C·H·W) to the
painting at 512 px, of the output divided by that of the input frame, averaged over every
`score_every`-th frame; it needs the painting and VGG weights, else it is left out. Speed: the
whole clip through `media.video.stylize_video`, plain and `--temporal`, alternated, best of
`repeats` each, after a warm-up of both at that size. Rows go to `OUTPUT/temporal.jsonl` with
the environment; the table is printed (`temporal_report`: lines, table, the issue's bars).
Run: `python -m styleforge.bench.temporal --help` or `styleforge bench --temporal`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch

from ..engine.stroke import stroke_factor
from ..media.flow import FlowEstimator, to_gray
from ..media.flow_ahead import FlowAhead
from ..media.warping_error import step_masks, warping_error
from .temporal_clips import read_clip, render_scene, write_clip
from .temporal_options import TemporalBenchConfig, add_arguments, config_from_args
from .temporal_report import line, markdown, save_rows

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_PHOTOS = ("chelsea.jpg", "coffee.jpg", "astronaut.jpg")
STYLE_LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")
SCORE_SIDE = 512
ABSENT = "absent: no style trained with --stability-weight (pass --stability-checkpoint)"


@dataclass
class Clip:
    name: str
    path: Path
    frames: list[np.ndarray]      # the first `frames` frames, decoded from `path`
    timed: bool                   # whether the video path is timed on it
    cuts: tuple[int, ...] = ()    # frames that begin a new shot: the steps into them are not scored


def make_clips(config: TemporalBenchConfig, folder: Path, log=print) -> list[Clip]:
    from PIL import Image
    photos = [np.asarray(Image.open(p).convert("RGB"))
              for p in (config.photos or tuple(str(ASSETS / name) for name in DEFAULT_PHOTOS))]
    width = config.size
    size = (round(width * 9 / 16 / 2) * 2, width // 2 * 2)
    count = max(config.frames, config.speed_frames)
    clips = []
    for scene in config.scenes:
        path = write_clip(folder / f"{scene}.mp4", render_scene(scene, photos, size, count, cut_at=config.frames // 2))
        clips.append(Clip(f"{scene}@{size[1]}x{size[0]}", path, read_clip(path, config.frames), config.speed_frames > 0,
                          (config.frames // 2,) if scene == "cut" else ()))
        log(f"made {clips[-1].name}: {count} frames")
    if config.speed_4k and config.speed_frames:
        path = write_clip(folder / "pan-4k.mp4", render_scene("pan", photos, (2160, 3840), config.speed_frames))
        clips.append(Clip("pan@3840x2160", path, [], True))
    for video in config.videos:
        clips.append(Clip(Path(video).name, Path(video), read_clip(video, config.frames), config.speed_frames > 0))
    return clips


class StyleScorer:
    """The project's style ratio (see the module docstring) on the library's VGG16."""

    def __init__(self, vgg_weights: str, painting: str, device: str | torch.device = "cpu"):
        from PIL import Image

        from ..models.vgg import load_vgg16
        from ..training.losses import gram
        self._gram = gram
        self.device = torch.device(device)
        self.vgg = load_vgg16(vgg_weights).to(self.device)
        art = Image.open(painting).convert("RGB")
        scale = min(1.0, 512 / max(art.size))
        art = art.resize((round(art.width * scale), round(art.height * scale)), Image.BICUBIC)
        self.targets = self._grams(np.asarray(art))

    @torch.no_grad()
    def _grams(self, rgb: np.ndarray) -> list[torch.Tensor]:
        height, width = rgb.shape[:2]
        scale = min(1.0, SCORE_SIDE / max(height, width))   # the project's scoring: longest side 512
        if scale < 1.0:
            rgb = cv2.resize(rgb, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA)
        feats = self.vgg(torch.from_numpy(np.array(rgb)).permute(2, 0, 1)[None].float().to(self.device))
        return [self._gram(getattr(feats, name)) for name in STYLE_LAYERS]

    def loss(self, rgb: np.ndarray) -> float:
        return sum(float(((g - t) ** 2).sum()) for g, t in zip(self._grams(rgb), self.targets))

    def ratio(self, inputs: list[np.ndarray], outputs: list[np.ndarray], every: int = 1) -> float:
        return float(np.mean([self.loss(o) / self.loss(i) for i, o in zip(inputs[::every], outputs[::every])]))


def stylize_frames(stylizer, frames: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """uint8 frames → styled uint8 frames, and ms per frame (the first, warm-up call untimed)."""
    def one(rgb):
        out = stylizer(torch.from_numpy(rgb).permute(2, 0, 1)[None].float())[0]
        return out.round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).contiguous().numpy()
    one(frames[0])
    start = time.perf_counter()
    outputs = [one(f) for f in frames]
    return outputs, (time.perf_counter() - start) * 1e3 / len(frames)


def input_flows(frames: list[np.ndarray], workers: int) -> list:
    """The metric's DIS flows (medium, full size) of each consecutive pair, pairs in parallel."""
    def pair(t):
        estimator = FlowEstimator("medium")
        return estimator(frames[t - 1], frames[t]), estimator(frames[t], frames[t - 1])
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(pair, range(1, len(frames))))


def shot_error(outputs, flows, masks, cuts: tuple[int, ...]) -> float:
    """The warping error's mean over the steps within shots: across a cut the inputs' flow
    matches nothing and both methods show the new shot's frame, so that step says nothing."""
    steps = warping_error(outputs, flows, masks).per_step
    return float(np.mean([e for t, e in enumerate(steps, start=1) if t not in cuts]))


def blend_frames(frames, styled, config: TemporalBenchConfig, device: torch.device,
                 stroke_scale: float | None = None) -> tuple[list[np.ndarray], float]:
    """The video path's blend of `styled` (its flows computed first, as the decode workers do;
    the detail blur sized to the stylizer's strokes, `stroke_scale` as in StylizeOptions)
    → blended frames and ms per frame of the blend alone."""
    ahead = FlowAhead(check=config.flow_check)
    flows = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
    settings = dict(strength=config.strength, detail_sigma=config.detail_sigma, flow_check=config.flow_check,
                    stroke_factor=stroke_factor(*styled[0].shape[:2], stroke_scale))
    if device.type == "cuda":
        from ..media.temporal_torch import TorchTemporalBlender
        blender = TorchTemporalBlender(**settings, device=device)
        upload = [(torch.from_numpy(c).to(device).permute(2, 0, 1).float(),
                   torch.from_numpy(s).to(device).permute(2, 0, 1).float(),
                   torch.from_numpy(f).to(device) if f is not None else None) for c, s, f in zip(frames, styled, flows)]
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        outputs = [blender(c, s, f) for c, s, f in upload]
        torch.cuda.synchronize(device)
        ms = (time.perf_counter() - start) * 1e3 / len(frames)
        return [o.permute(1, 2, 0).to(torch.uint8).cpu().numpy() for o in outputs], ms
    from ..media.temporal import TemporalBlender
    blender = TemporalBlender(**settings)
    start = time.perf_counter()
    outputs = [blender.blend(c, s, f) for c, s, f in zip(frames, styled, flows)]
    return outputs, (time.perf_counter() - start) * 1e3 / len(frames)


def video_speed(clip: Clip, stylizer, options, config: TemporalBenchConfig, folder: Path) -> dict:
    """Frames/s of the whole clip through the video path, plain and --temporal, best of `repeats`."""
    from ..media.options import VideoOptions
    from ..media.video import stylize_video
    best = {"plain": 0.0, "temporal": 0.0}
    for _ in range(config.repeats):
        for mode, strength in (("plain", 0.0), ("temporal", config.strength)):
            result = stylize_video(clip.path, folder / f"out-{mode}.mp4", stylizer, options,
                                   VideoOptions(temporal=strength, temporal_flow_check=config.flow_check))
            best[mode] = max(best[mode], result.fps)
    return {"fps_plain": best["plain"], "fps_temporal": best["temporal"],
            "fps_ratio": best["temporal"] / best["plain"] if best["plain"] else None}


def warm_up(clip: Clip, stylizer, options, config: TemporalBenchConfig, folder: Path) -> None:
    """Both modes once on a short stretch: graph capture and plan timing stay out of the timings."""
    from ..media.options import VideoOptions
    from ..media.video import stylize_video
    for strength in (0.0, config.strength):
        stylize_video(clip.path, folder / "warm.mp4", stylizer, options,
                      VideoOptions(temporal=strength, duration=0.4, temporal_flow_check=config.flow_check))


def stability_style(style: str) -> str | None:
    """A shipped style trained on the same painting with --stability-weight > 0, if there is one
    (read from the files' metadata headers only)."""
    from safetensors import safe_open

    from ..models import registry

    def training(path) -> dict:
        try:
            with safe_open(str(path), framework="pt") as f:
                return json.loads((f.metadata() or {}).get("training", "{}"))
        except Exception:   # a checkpoint of another format, or no training record: not a candidate
            return {}
    styles = registry.list_styles()
    mine = next((info for info in styles if info.name == style or str(info.path) == style), None)
    painting = training(mine.path if mine else style).get("style_image")
    for info in styles:
        t = training(info.path)
        if (info is not mine and painting and t.get("style_image") == painting
                and float(t.get("stability_weight") or 0) > 0):
            return info.name
    return None


def run_temporal_bench(config: TemporalBenchConfig, log=print) -> list[dict]:
    from ..engine.options import StylizeOptions
    from ..engine.pipeline import Stylizer

    def engine(style: str) -> tuple[Stylizer, StylizeOptions]:
        key = "checkpoint" if Path(style).suffix in (".safetensors", ".pth", ".pt") else "style"
        options = StylizeOptions(**{key: style}, device=config.device, overwrite=True)
        return Stylizer(options), options

    models = {"per-frame": engine(config.style)}
    stability = config.stability_checkpoint or stability_style(config.style)
    if stability:
        models["stability"] = engine(stability)
    stylizer, options = models["per-frame"]
    device = torch.device(getattr(stylizer, "device", "cpu"))
    scorer = (StyleScorer(config.vgg_weights, config.painting, device)
              if config.vgg_weights and config.painting else None)
    if scorer is None:
        log("style ratio left out: it needs --painting and --vgg-weights")
    workers = max(1, min(16, os.cpu_count() or 1))
    rows = []
    with tempfile.TemporaryDirectory(prefix="sf-temporal-") as tmp:
        folder = Path(tmp)
        warmed = set()
        for clip in make_clips(config, folder, log):
            clip_rows = []
            if clip.frames:
                flows = input_flows(clip.frames, workers)
                masks = step_masks(flows)
                for model_name, (model, model_options) in models.items():
                    styled, stylize_ms = stylize_frames(model, clip.frames)
                    blended, blend_ms = blend_frames(clip.frames, styled, config, device,
                                                     model_options.stroke_scale)
                    both = "temporal" if model_name == "per-frame" else f"{model_name}+temporal"
                    for method, outputs, extra_ms in ((model_name, styled, 0.0), (both, blended, blend_ms)):
                        clip_rows.append({
                            "clip": clip.name, "method": method, "frames": len(outputs),
                            "size": f"{outputs[0].shape[1]}x{outputs[0].shape[0]}",
                            "warp_error": shot_error(outputs, flows, masks, clip.cuts),
                            "style_ratio": scorer.ratio(clip.frames, outputs, config.score_every) if scorer else None,
                            "stylize_ms": stylize_ms, "blend_ms": extra_ms,
                            "strength": config.strength if "temporal" in method else 0.0})
                if "stability" not in models:
                    clip_rows.append({"clip": clip.name, "method": "stability", "absent": ABSENT})
                _relative(clip_rows)
            if clip.timed:
                shape = clip.name.split("@")[-1]
                if shape not in warmed:
                    warm_up(clip, stylizer, options, config, folder)
                    warmed.add(shape)
                speed = video_speed(clip, stylizer, options, config, folder)
                if not clip_rows:
                    clip_rows.append({"clip": clip.name, "method": "speed only"})
                for row in clip_rows:
                    if row["method"] in ("per-frame", "temporal", "speed only"):
                        row.update(speed)
            for row in clip_rows:
                log(line(row))
            rows += clip_rows
    if config.output:
        save_rows(rows, config)
    return rows


def _relative(rows: list[dict]) -> None:
    """Each row's warping error and style ratio as a multiple of per-frame's on its clip."""
    base = next(r for r in rows if r["method"] == "per-frame")
    for row in rows:
        if "absent" in row:
            continue
        row["warp_vs_per_frame"] = row["warp_error"] / base["warp_error"] if base["warp_error"] else None
        row["style_change"] = (row["style_ratio"] / base["style_ratio"] - 1.0
                               if row["style_ratio"] is not None and base["style_ratio"] else None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m styleforge.bench.temporal", description=__doc__.split("\n\n")[0])
    p.add_argument("--style", default="candy")
    p.add_argument("--vgg-weights", metavar="PATH", help="torchvision-key VGG16 (for the style ratio)")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"))
    p.add_argument("--output", default="benchmarks/results", help="folder for temporal.jsonl")
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        rows = run_temporal_bench(config_from_args(args), log=lambda m: print(m, file=sys.stderr))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
