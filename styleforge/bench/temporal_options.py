"""Settings of the temporal-consistency benchmark (`bench/temporal.py`) and their flags.

Kept apart from the runner so that `styleforge bench` can add the flags without importing
OpenCV or torch when its parser is built. Motion names are checked when the clips are made.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

MOTION_NAMES = ("integer-pan", "subpixel-pan", "zoom", "pan-zoom")   # media/synthetic.py's MOTIONS
DEFAULT_MOTIONS = ("subpixel-pan", "zoom")


@dataclass(frozen=True)
class TemporalBenchConfig:
    style: str = "candy"                      # built-in style or checkpoint path
    stability_checkpoint: str | None = None   # a style trained with --stability-weight, compared too
    painting: str | None = None               # the style's painting (for the style ratio)
    vgg_weights: str | None = None            # torchvision-key VGG16 file (for the style ratio)
    videos: tuple[str, ...] = ()              # real clips
    video_start: int = 0                      # frames of the real clips skipped first
    photos: tuple[str, ...] = ()              # stills for the camera clips; empty = shipped assets
    motions: tuple[str, ...] = DEFAULT_MOTIONS
    size: int = 160                           # frames' longer side
    frames: int = 12
    strength: float = 0.8
    detail_sigma: float = 2.0                 # TemporalBlender.detail_sigma
    device: str = "cpu"
    output: str | None = "benchmarks/results"

    def __post_init__(self):
        if self.frames < 2 or self.size < 16 or self.video_start < 0:
            raise ValueError("frames must be ≥ 2, size ≥ 16 and video_start ≥ 0")
        for path in (*self.videos, *self.photos, *(p for p in (self.painting, self.vgg_weights,
                                                                self.stability_checkpoint) if p)):
            if not Path(path).is_file():
                raise FileNotFoundError(f"{path}: no such file")


def add_arguments(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The bench's flags; `prefix` (e.g. "temporal-") namespaces the generic ones under `styleforge bench`."""
    d = TemporalBenchConfig()
    p.add_argument("--stability-checkpoint", metavar="PATH", help="a style trained with --stability-weight")
    p.add_argument("--painting", metavar="PATH", help="the style's painting (for the style ratio)")
    p.add_argument("--video", dest="videos", action="append", default=[], metavar="FILE",
                   help="a real clip (repeatable)")
    p.add_argument("--video-start", type=int, default=d.video_start, metavar="N", help="skip N frames of each clip")
    p.add_argument("--photo", dest="photos", action="append", default=[], metavar="FILE",
                   help="a still for the camera clips (repeatable; default: the shipped assets)")
    p.add_argument(f"--{prefix}motions", dest="motions", default=",".join(d.motions),
                   help=f"comma list of {','.join(MOTION_NAMES)}")
    p.add_argument(f"--{prefix}size", dest="temporal_size", type=int, default=d.size, help="frames' longer side")
    p.add_argument(f"--{prefix}frames", dest="frames", type=int, default=d.frames)
    p.add_argument(f"--{prefix}strength", dest="strength", type=float, default=d.strength)
    p.add_argument(f"--{prefix}detail-sigma", dest="detail_sigma", type=float, default=d.detail_sigma,
                   help="px: finer detail stays the current frame's (0: blend everything)")


def config_from_args(args: argparse.Namespace) -> TemporalBenchConfig:
    return TemporalBenchConfig(
        style=args.style or "candy", stability_checkpoint=args.stability_checkpoint, painting=args.painting,
        vgg_weights=args.vgg_weights, videos=tuple(args.videos), video_start=args.video_start,
        photos=tuple(args.photos),
        motions=tuple(m for m in args.motions.split(",") if m), size=args.temporal_size, frames=args.frames,
        strength=args.strength, detail_sigma=args.detail_sigma, device=args.device, output=args.output)
