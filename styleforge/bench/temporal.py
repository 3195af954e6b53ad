"""Temporal-consistency benchmark: per-frame stylization vs `--temporal` (and a stability-trained
style) side by side — warping error, style-loss ratio and cost — on synthetic camera clips and
on real video files.

Warping error: Lai et al. 2018 (`media/warping_error.py`); on synthetic clips with the exact
flow and with DIS flow on the inputs, on real clips with DIS. Style ratio: the project's scoring
(shared `style_metrics.py`, re-implemented here on the library's VGG16): Σ over relu1_2…relu4_3
of the summed squared Gram difference (Grams ÷ C·H·W) to the painting at 512 px, of the output
divided by that of the input frame, averaged over frames; it needs the painting and VGG weights,
else it is left out. Cost: ms per frame of stylization and of blending, on the same machine, same
frames. Rows go to `OUTPUT/temporal.jsonl` with the environment; the table is printed.
Run: `python -m styleforge.bench.temporal --help` or `styleforge bench --temporal`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import cv2
import numpy as np
import torch

from ..media.synthetic import motion_clip
from ..media.temporal import TemporalBlender
from ..media.warping_error import input_flows, step_masks, warping_error
from .temporal_options import TemporalBenchConfig, add_arguments, config_from_args

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_PHOTOS = ("chelsea.jpg", "coffee.jpg")
STYLE_LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")


@dataclass
class Clip:
    name: str
    frames: list[np.ndarray]
    exact: list | None            # exact flow pairs (synthetic clips)


def read_video(path: str, frames: int, size: int, start: int = 0) -> list[np.ndarray]:
    capture = cv2.VideoCapture(path)
    for _ in range(start):
        capture.grab()
    out = []
    while len(out) < frames:
        ok, bgr = capture.read()
        if not ok:
            break
        out.append(_resize(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), size))
    capture.release()
    if len(out) < 2:
        raise ValueError(f"{path}: could not read 2 frames (OpenCV cannot decode it?)")
    return out


def _resize(rgb: np.ndarray, size: int) -> np.ndarray:
    height, width = rgb.shape[:2]
    scale = size / max(height, width)
    return cv2.resize(rgb, (round(width * scale) // 4 * 4, round(height * scale) // 4 * 4),
                      interpolation=cv2.INTER_AREA)


def make_clips(config: TemporalBenchConfig) -> list[Clip]:
    from PIL import Image
    clips = []
    photos = config.photos or tuple(str(ASSETS / name) for name in DEFAULT_PHOTOS)
    height = config.size * 3 // 4 // 4 * 4
    for photo_path in photos:
        photo = np.asarray(Image.open(photo_path).convert("RGB"))
        for motion in config.motions:
            clip = motion_clip(photo, motion, (height, config.size), config.frames)
            clips.append(Clip(f"{Path(photo_path).stem}/{motion}", clip.frames, clip.flows))
    for video in config.videos:
        clips.append(Clip(Path(video).name, read_video(video, config.frames, config.size, config.video_start), None))
    return clips


class StyleScorer:
    """The project's style ratio (see the module docstring) on the library's VGG16."""

    def __init__(self, vgg_weights: str, painting: str):
        from PIL import Image

        from ..models.vgg import load_vgg16
        from ..training.losses import gram
        self._gram = gram
        self.vgg = load_vgg16(vgg_weights)
        art = Image.open(painting).convert("RGB")
        scale = min(1.0, 512 / max(art.size))
        art = art.resize((round(art.width * scale), round(art.height * scale)), Image.BICUBIC)
        self.targets = self._grams(np.asarray(art))

    @torch.no_grad()
    def _grams(self, rgb: np.ndarray) -> list[torch.Tensor]:
        feats = self.vgg(torch.from_numpy(np.array(rgb)).permute(2, 0, 1)[None].float())
        return [self._gram(getattr(feats, name)) for name in STYLE_LAYERS]

    def loss(self, rgb: np.ndarray) -> float:
        return sum(float(((g - t) ** 2).sum()) for g, t in zip(self._grams(rgb), self.targets))

    def ratio(self, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> float:
        return float(np.mean([self.loss(o) / self.loss(i) for i, o in zip(inputs, outputs)]))


def stylize_frames(stylizer, frames: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """uint8 frames → styled uint8 frames, and ms per frame (the first, warm-up call untimed)."""
    def one(rgb):
        out = stylizer(torch.from_numpy(rgb).permute(2, 0, 1)[None].float())[0]
        return out.round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).contiguous().numpy()
    one(frames[0])
    start = time.perf_counter()
    outputs = [one(f) for f in frames]
    return outputs, (time.perf_counter() - start) * 1e3 / len(frames)


def blend_frames(frames, styled, strength: float, detail_sigma: float) -> tuple[list[np.ndarray], float]:
    blender = TemporalBlender(strength=strength, detail_sigma=detail_sigma)
    start = time.perf_counter()
    outputs = [blender(c, s) for c, s in zip(frames, styled)]
    return outputs, (time.perf_counter() - start) * 1e3 / len(frames)


def run_temporal_bench(config: TemporalBenchConfig, log=print) -> list[dict]:
    from ..engine.options import StylizeOptions
    from ..engine.pipeline import Stylizer

    def engine(style: str) -> Stylizer:
        key = "checkpoint" if Path(style).suffix in (".safetensors", ".pth", ".pt") else "style"
        return Stylizer(StylizeOptions(**{key: style}, device=config.device, precision="fp32", backend="reference"))

    models = {"per-frame": engine(config.style)}
    if config.stability_checkpoint:
        models["stability"] = engine(config.stability_checkpoint)
    scorer = StyleScorer(config.vgg_weights, config.painting) if config.vgg_weights and config.painting else None
    if scorer is None:
        log("style ratio left out: it needs --painting and --vgg-weights")
    rows = []
    for clip in make_clips(config):
        dis = input_flows(clip.frames)
        dis_masks = step_masks(dis)
        exact_masks = step_masks(clip.exact) if clip.exact else None
        for model_name, stylizer in models.items():
            styled, stylize_ms = stylize_frames(stylizer, clip.frames)
            blended, blend_ms = blend_frames(clip.frames, styled, config.strength, config.detail_sigma)
            variants = {model_name: (styled, 0.0),
                        ("temporal" if model_name == "per-frame" else f"{model_name}+temporal"): (blended, blend_ms)}
            for method, (outputs, extra_ms) in variants.items():
                row = {"clip": clip.name, "method": method, "frames": len(outputs),
                       "size": f"{outputs[0].shape[1]}x{outputs[0].shape[0]}",
                       "warp_error_dis": warping_error(outputs, dis, dis_masks).mean,
                       "warp_error_exact": (warping_error(outputs, clip.exact, exact_masks).mean
                                            if clip.exact else None),
                       "style_ratio": scorer.ratio(clip.frames, outputs) if scorer else None,
                       "stylize_ms": stylize_ms, "blend_ms": extra_ms,
                       "strength": config.strength if "temporal" in method else 0.0}
                rows.append(row)
                log(f"{clip.name:28s} {method:20s} warp {row['warp_error_dis']:.5f}"
                    + (f"  style {row['style_ratio']:.3f}" if scorer else ""))
    if config.output:
        save_rows(rows, config)
    return rows


def save_rows(rows: list[dict], config: TemporalBenchConfig) -> Path:
    from .env import capture_environment
    from .results import new_run_id
    path = Path(config.output) / "temporal.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    env = capture_environment(config.device)
    run_id = new_run_id()
    with path.open("a") as f:
        for row in rows:
            f.write(json.dumps({"run_id": run_id, **row, "config": asdict(config), "env": env}) + "\n")
    return path


def summarise(rows: list[dict]) -> list[dict]:
    """Per method, means over clips, and each as a multiple of per-frame stylization."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    clips = list(dict.fromkeys(r["clip"] for r in rows))
    by = {(r["clip"], r["method"]): r for r in rows}
    out = []
    for method in methods:
        mine = [by[(c, method)] for c in clips if (c, method) in by]
        base = [by[(c, "per-frame")] for c in clips if (c, method) in by]

        def mean(key, rows_):
            values = [r[key] for r in rows_ if r[key] is not None]
            return float(np.mean(values)) if values else None

        def ratio(key):
            pairs = [(m[key], b[key]) for m, b in zip(mine, base) if m[key] is not None and b[key]]
            return float(np.mean([m / b for m, b in pairs])) if pairs else None
        out.append({"method": method, "warp_error_dis": mean("warp_error_dis", mine),
                    "warp_vs_per_frame": ratio("warp_error_dis"),
                    "warp_exact_vs_per_frame": ratio("warp_error_exact"),
                    "style_ratio": mean("style_ratio", mine), "style_vs_per_frame": ratio("style_ratio"),
                    "ms_per_frame": mean("stylize_ms", mine) + mean("blend_ms", mine),
                    "blend_ms": mean("blend_ms", mine)})
    return out


def markdown(rows: list[dict]) -> str:
    def f(v, fmt):
        return "–" if v is None else format(v, fmt)
    lines = ["| clip | method | warping error (DIS) | (exact flow) | style ratio | stylize ms | blend ms |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['clip']} | {r['method']} | {f(r['warp_error_dis'], '.5f')} | "
                     f"{f(r['warp_error_exact'], '.5f')} | {f(r['style_ratio'], '.3f')} | "
                     f"{r['stylize_ms']:.1f} | {r['blend_ms']:.1f} |")
    lines += ["", "| method | warping error (DIS) | × per-frame (DIS) | × per-frame (exact) | style ratio | "
                  "× per-frame | ms/frame | of which blend |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summarise(rows):
        lines.append(f"| {s['method']} | {f(s['warp_error_dis'], '.5f')} | {f(s['warp_vs_per_frame'], '.3f')} | "
                     f"{f(s['warp_exact_vs_per_frame'], '.3f')} | {f(s['style_ratio'], '.3f')} | "
                     f"{f(s['style_vs_per_frame'], '.3f')} | {s['ms_per_frame']:.1f} | {s['blend_ms']:.1f} |")
    return "\n".join(lines)


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
