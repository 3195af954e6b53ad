"""Playground (never imported by the package): the bench's clips stylized once, kept on disk.

The blend is what `sweep.py` and `blend_lab.py` vary; the network, the inputs and the metric's
flows are not. `build` makes the bench's generated clips (`bench.temporal.make_clips`: H.264,
decoded as the video path decodes, rendered 90 frames long as the bench renders them), stylizes
each frame on `device`, and writes one folder per clip under `root` (git-ignored `out/` is the
place): `frames.npy`, `styled.npy` (uint8 (T, H, W, 3)), `backward.npy` (the metric's DIS medium
full-size backward flows, (T−1, H, W, 2) float32: the warping error warps with these only),
`masks.npy` (its non-occlusion masks, from both flows), `blend_fast.npy` (`FlowAhead`'s pair
flows at 640 px, frame 0 a zero placeholder) and `meta.json` (cuts, stylize device). `load`
memory-maps them back. 1080p, 24 frames, five clips: about 4 GB.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from styleforge.bench.temporal import input_flows, make_clips, stylize_frames
from styleforge.bench.temporal_options import TemporalBenchConfig
from styleforge.media.flow import to_gray
from styleforge.media.flow_ahead import FlowAhead
from styleforge.media.warping_error import step_masks


def blend_flows(frames, preset: str) -> np.ndarray:
    ahead = FlowAhead(preset)
    pairs = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
    return np.stack([np.zeros_like(pairs[1])] + pairs[1:])


def build(root: Path, size: int, frames: int, scenes: tuple[str, ...], device: str, workers: int = 1) -> None:
    from styleforge.engine.options import StylizeOptions
    from styleforge.engine.pipeline import Stylizer
    # Rendered as long as the bench renders them (90 frames): a pan's canvas and a cut's second
    # shot depend on the clip's length, so a 24-frame rendering is another clip.
    length = max(frames, TemporalBenchConfig().speed_frames)
    config = TemporalBenchConfig(size=size, frames=frames, speed_frames=length, output=None, scenes=scenes)
    stylizer = Stylizer(StylizeOptions(style="candy", device=device))
    with tempfile.TemporaryDirectory() as tmp:
        for clip in make_clips(config, Path(tmp), log=lambda m: print(m, file=sys.stderr)):
            folder = root / clip.name
            if (folder / "meta.json").exists():
                continue
            folder.mkdir(parents=True, exist_ok=True)
            np.save(folder / "frames.npy", np.stack(clip.frames))
            np.save(folder / "styled.npy", np.stack(stylize_frames(stylizer, clip.frames)[0]))
            np.save(folder / "blend_fast.npy", blend_flows(clip.frames, "fast"))
            flows = input_flows(clip.frames, workers)
            np.save(folder / "masks.npy", np.stack(step_masks(flows)).astype(np.uint8))
            np.save(folder / "backward.npy", np.stack([b for _, b in flows]))
            del flows
            (folder / "meta.json").write_text(json.dumps({"cuts": list(clip.cuts), "device": device}))
            print(f"cached {clip.name}", file=sys.stderr, flush=True)


def load(root: Path, prefixes: tuple[str, ...] = ()):
    """Yield (name, cuts, frames, styled, metric flows as (None, backward) pairs, masks,
    blend flows per frame (None for frame 0)) for each cached clip whose name starts with one
    of `prefixes` (all if empty)."""
    for folder in sorted(p for p in root.iterdir() if (p / "meta.json").exists()):
        if prefixes and not folder.name.startswith(prefixes):
            continue
        meta = json.loads((folder / "meta.json").read_text())
        frames = list(np.load(folder / "frames.npy", mmap_mode="r"))
        styled = list(np.load(folder / "styled.npy", mmap_mode="r"))
        backward = np.load(folder / "backward.npy", mmap_mode="r")
        masks = [m.astype(np.float32) for m in np.load(folder / "masks.npy")]
        pair = np.load(folder / "blend_fast.npy")
        yield (folder.name, tuple(meta["cuts"]), [np.ascontiguousarray(f) for f in frames],
               [np.ascontiguousarray(s) for s in styled], [(None, b) for b in backward], masks,
               [None] + list(pair[1:]))


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description="stylize the bench's clips once and keep them (see the docstring)")
    p.add_argument("root", type=Path)
    p.add_argument("--size", type=int, default=1920)
    p.add_argument("--frames", type=int, default=24)
    p.add_argument("--scenes", default="pan,zoom,subject,rotation,cut")
    p.add_argument("--device", default="cpu")
    p.add_argument("--workers", type=int, default=1)
    a = p.parse_args()
    build(a.root, a.size, a.frames, tuple(a.scenes.split(",")), a.device, a.workers)
