"""Playground (never imported): the shipped torch blend against the OpenCV reference and the
CUDA-graph version (`versions/blend_graphed.py`, eager on the CPU) on the bench's generated clips
at a given size: per clip, the largest and mean |difference| in levels over the blended frames,
and the trusted share.

    python dev/temporal/compare_blends.py --size 960 --frames 8 [--device cuda]
"""
import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent / "versions"))
from blend_graphed import GraphedTemporalBlender  # noqa: E402

from styleforge.bench.temporal import make_clips  # noqa: E402
from styleforge.bench.temporal_options import TemporalBenchConfig  # noqa: E402
from styleforge.engine.stroke import stroke_factor  # noqa: E402
from styleforge.media.flow import to_gray  # noqa: E402
from styleforge.media.flow_ahead import FlowAhead  # noqa: E402
from styleforge.media.temporal import TemporalBlender  # noqa: E402
from styleforge.media.temporal_torch import TorchTemporalBlender  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, default=960)
p.add_argument("--frames", type=int, default=8)
p.add_argument("--device", default="cpu")
a = p.parse_args()
torch.set_grad_enabled(False)
chw = lambda x: torch.from_numpy(x).permute(2, 0, 1).float().to(a.device)   # noqa: E731
hwc = lambda x: x.permute(1, 2, 0).to(torch.uint8).cpu().numpy().astype(int)   # noqa: E731


def stylized_like(frames):
    """A stand-in stylization with stroke-scale texture that flickers: the frame plus per-frame noise
    blurred to about the stroke size (no network: this compares blenders, not styles)."""
    import cv2
    rng = np.random.default_rng(0)
    out = []
    for f in frames:
        noise = cv2.GaussianBlur(rng.normal(0, 60, f.shape).astype(np.float32), (0, 0), 2.0)
        out.append(np.clip(f.astype(np.float32) * 0.8 + noise + 20, 0, 255).astype(np.uint8))
    return out


config = TemporalBenchConfig(size=a.size, frames=a.frames, speed_frames=0, output=None)
with tempfile.TemporaryDirectory() as tmp:
    for clip in make_clips(config, Path(tmp), log=lambda m: None):
        frames = clip.frames
        styled = stylized_like(frames)
        ahead = FlowAhead()
        flows = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
        settings = dict(stroke_factor=stroke_factor(*frames[0].shape[:2], None))
        ref = TemporalBlender(**settings)
        new = TorchTemporalBlender(**settings, device=a.device)
        graphed = GraphedTemporalBlender(**settings, device=a.device)
        gaps = {"opencv": [], "graphed": []}
        for c, s, f in zip(frames, styled, flows):
            r = ref.blend(c, s, f).astype(int)
            n = hwc(new(chw(c), chw(s), f))
            gaps["opencv"].append(np.abs(n - r))
            gaps["graphed"].append(np.abs(n - hwc(graphed(chw(c), chw(s), f))))
        line = "  ".join(f"vs {k}: max {max(g.max() for g in v)} mean {np.mean([g.mean() for g in v]):.3f} "
                         f"p99.9 {np.percentile(np.concatenate([g.ravel() for g in v]), 99.9):.0f}"
                         for k, v in gaps.items())
        print(f"{clip.name:18s} factor {settings['stroke_factor']:.3f} {line}  trusted {new.trusted_fraction:.3f}/"
              f"{ref.trusted_fraction:.3f}/{graphed.trusted_fraction:.3f} restarts {new.restarts}/{ref.restarts}/"
              f"{graphed.restarts}", flush=True)
