"""Settings of the temporal-consistency benchmark (`bench/temporal.py`) and their flags.

Kept apart from the runner so that `styleforge bench` can add the flags without importing
OpenCV or torch when its parser is built. Scene names are checked when the clips are made.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..media.options import TEMPORAL_DETAIL_SIGMA, TEMPORAL_FLOW_CHECK, TEMPORAL_STRENGTH, TEMPORAL_UNCHECKED_TRUST

SCENE_NAMES = ("pan", "zoom", "subject", "rotation", "cut")   # bench/temporal_clips.py's SCENES


@dataclass(frozen=True)
class TemporalBenchConfig:
    style: str = "candy"                      # built-in style or checkpoint path
    stability_checkpoint: str | None = None   # a style trained with --stability-weight, compared too
    painting: str | None = None               # the style's painting (for the style ratio)
    vgg_weights: str | None = None            # torchvision-key VGG16 file (for the style ratio)
    videos: tuple[str, ...] = ()              # real clips, measured beside the generated ones
    photos: tuple[str, ...] = ()              # stills for the generated clips; empty = shipped assets
    scenes: tuple[str, ...] = SCENE_NAMES
    size: int = 1920                          # generated frames' width (16:9)
    frames: int = 24                          # frames scored per clip (the first ones)
    speed_frames: int = 90                    # frames of each generated clip timed through `video`; 0: no timing
    speed_4k: bool = False                    # also time the pan at 3840×2160
    repeats: int = 2                          # timed runs of each mode per clip (the best is kept)
    score_every: int = 4                      # style ratio on every n-th scored frame
    strength: float = TEMPORAL_STRENGTH
    detail_sigma: float = TEMPORAL_DETAIL_SIGMA   # TemporalSettings.detail_sigma (px at the network scale)
    flow_check: bool = TEMPORAL_FLOW_CHECK    # VideoOptions.temporal_flow_check: False, the backward flow alone
    unchecked_trust: float = TEMPORAL_UNCHECKED_TRUST   # recorded, not a knob: the blend's share of α
    #                                                     with the backward flow alone, in the rows' config
    device: str = "cpu"
    output: str | None = "benchmarks/results"

    def __post_init__(self):
        if self.frames < 2 or self.size < 16 or self.repeats < 1 or self.score_every < 1:
            raise ValueError("frames must be ≥ 2, size ≥ 16, repeats and score_every ≥ 1")
        if self.speed_frames and self.speed_frames < self.frames:
            raise ValueError(f"speed_frames ({self.speed_frames}) must be 0 or ≥ frames ({self.frames})")
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
    p.add_argument("--photo", dest="photos", action="append", default=[], metavar="FILE",
                   help="a still for the generated clips (repeatable; default: the shipped assets)")
    p.add_argument(f"--{prefix}scenes", dest="scenes", default=",".join(d.scenes),
                   help=f"comma list of {','.join(SCENE_NAMES)}")
    p.add_argument(f"--{prefix}size", dest="temporal_size", type=int, default=d.size,
                   help="generated frames' width (16:9)")
    p.add_argument(f"--{prefix}frames", dest="frames", type=int, default=d.frames, help="frames scored per clip")
    p.add_argument(f"--{prefix}speed-frames", dest="speed_frames", type=int, default=d.speed_frames,
                   help="frames per clip timed through the video path (0: no timing)")
    p.add_argument(f"--{prefix}4k", dest="speed_4k", action="store_true", help="also time the pan at 3840x2160")
    p.add_argument(f"--{prefix}repeats", dest="repeats", type=int, default=d.repeats)
    p.add_argument(f"--{prefix}strength", dest="strength", type=float, default=d.strength)
    p.add_argument(f"--{prefix}detail-sigma", dest="detail_sigma", type=float, default=d.detail_sigma,
                   help="px: finer detail stays the current frame's (0: blend everything)")
    p.add_argument(f"--{prefix}flow-check", dest="flow_check", action=argparse.BooleanOptionalAction,
                   default=d.flow_check, help="the blend's forward flow and forward-backward test "
                   "(--no-...: the backward flow alone, VideoOptions.temporal_flow_check)")


def config_from_args(args: argparse.Namespace) -> TemporalBenchConfig:
    return TemporalBenchConfig(
        style=args.style or "candy", stability_checkpoint=args.stability_checkpoint, painting=args.painting,
        vgg_weights=args.vgg_weights, videos=tuple(args.videos), photos=tuple(args.photos),
        scenes=tuple(s for s in args.scenes.split(",") if s), size=args.temporal_size, frames=args.frames,
        speed_frames=args.speed_frames, speed_4k=args.speed_4k, repeats=args.repeats,
        strength=args.strength, detail_sigma=args.detail_sigma, flow_check=args.flow_check, device=args.device,
        output=args.output)
