"""Optical flow, backward warping and occlusion masks for video frames (NumPy + OpenCV).

Convention: a flow `f` from frame A to frame B is (H, W, 2) float32 of (dx, dy) with
A(x) ≈ B(x + f(x)). `warp(B, f)` samples B at x + f(x), so it aligns B with A (backward warping).
The flow is OpenCV's DIS (Kroeger et al. 2016, "Fast Optical Flow using Dense Inverse Search").
`occlusion` is the forward–backward check and motion-boundary test of Ruder et al. 2016
("Artistic style transfer for videos"), written as in the evaluation code of Lai et al. 2018
("Learning Blind Video Temporal Consistency"): squared magnitudes, forward differences.
Not here: the blender (`temporal.py`) and the metric (`warping_error.py`).
"""
from __future__ import annotations

from contextlib import contextmanager

import cv2
import numpy as np

from .options import TEMPORAL_FLOW_PRESET

PRESETS = {"ultrafast": cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST,
           "fast": cv2.DISOPTICAL_FLOW_PRESET_FAST,
           "medium": cv2.DISOPTICAL_FLOW_PRESET_MEDIUM}
# The temporal blend's flows (the metric keeps medium at full size): fast costs a fifth to a third
# of medium on the CPU and kept issue 40's bars on every bench clip (the moving subject's warping
# error rose most, 0.43 → 0.48×; docs/temporal.md); on CUDA these CPU flows bound `--temporal`.
BLEND_PRESET = TEMPORAL_FLOW_PRESET


@contextmanager
def opencv_threads(threads: int | None):
    """OpenCV's thread count set to `threads` inside the block (None: left alone). DIS spreads
    each call over OpenCV's pool; the video path already runs one flow per decode worker, so
    the pool can only compete with them, the decoder and the encoder for cores. The setting is
    process-wide: overlapping blocks restore in the order they leave."""
    if threads is None:
        yield
        return
    before = cv2.getNumThreads()
    cv2.setNumThreads(threads)
    try:
        yield
    finally:
        cv2.setNumThreads(before)


def to_gray(image: np.ndarray) -> np.ndarray:
    """uint8 (H, W, 3) RGB or (H, W) → uint8 (H, W)."""
    if image.ndim == 2:
        return image
    return cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY)


def resize_flow(flow: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Flow resampled to (height, width), its vectors scaled with the image."""
    height, width = size
    if flow.shape[:2] == (height, width):
        return flow
    out = cv2.resize(flow, (width, height), interpolation=cv2.INTER_LINEAR)
    out[..., 0] *= width / flow.shape[1]
    out[..., 1] *= height / flow.shape[0]
    return out


def shrink(gray: np.ndarray, max_side: int | None) -> np.ndarray:
    """uint8 (H, W) → a copy whose longer side is at most `max_side` (area-averaged), or itself."""
    height, width = gray.shape
    if not max_side or max(height, width) <= max_side:
        return gray
    scale = max_side / max(height, width)
    small = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(gray, small, interpolation=cv2.INTER_AREA)


def dis(preset: str) -> cv2.DISOpticalFlow:
    if preset not in PRESETS:
        raise ValueError(f"flow preset must be one of {tuple(PRESETS)}, got {preset!r}")
    return cv2.DISOpticalFlow_create(PRESETS[preset])


class FlowEstimator:
    """DIS flow between two frames. `max_side` computes it on a downscaled copy of larger frames
    (the cost grows with pixels; camera-scale motion survives a 2× downscale) and scales it back.
    One estimator holds OpenCV state: use one per thread."""

    def __init__(self, preset: str = "medium", max_side: int | None = None):
        if max_side is not None and max_side < 16:
            raise ValueError(f"flow max_side must be ≥ 16, got {max_side}")
        self.preset, self.max_side = preset, max_side
        self._dis = dis(preset)

    def small(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Flow from `a` to `b` at the downscaled size, in the downscaled copy's pixels."""
        if a.shape[:2] != b.shape[:2]:
            raise ValueError(f"flow needs frames of one size, got {a.shape[:2]} and {b.shape[:2]}")
        return self._dis.calc(shrink(to_gray(a), self.max_side), shrink(to_gray(b), self.max_side), None)

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Flow from frame `a` to frame `b` (same size): a(x) ≈ b(x + flow(x))."""
        return resize_flow(self.small(a, b), a.shape[:2])


def sample_grid(flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Absolute sampling coordinates x + flow(x), as cv2.remap's two float32 maps."""
    height, width = flow.shape[:2]
    xs = np.arange(width, dtype=np.float32)[None, :] + flow[..., 0]
    ys = np.arange(height, dtype=np.float32)[:, None] + flow[..., 1]
    return xs, ys


def warp(image: np.ndarray, flow: np.ndarray, interpolation: int = cv2.INTER_LINEAR) -> np.ndarray:
    """`image` sampled at x + flow(x): (H, W[, C]) of any float or uint8 dtype, same size as flow.
    Outside the frame the border is replicated (the masks say which pixels to trust)."""
    xs, ys = sample_grid(flow)
    return cv2.remap(image, xs, ys, interpolation, borderMode=cv2.BORDER_REPLICATE)


def inside(flow: np.ndarray) -> np.ndarray:
    """bool (H, W): x + flow(x) lands inside the other frame (pixels entering the view do not)."""
    height, width = flow.shape[:2]
    xs, ys = sample_grid(flow)
    return (xs >= 0) & (xs <= width - 1) & (ys >= 0) & (ys <= height - 1)


def squared_norm(flow: np.ndarray) -> np.ndarray:
    return flow[..., 0] ** 2 + flow[..., 1] ** 2


def motion_boundary(flow: np.ndarray) -> np.ndarray:
    """bool (H, W): |∇u|² + |∇v|² > 0.01·|f|² + 0.002 (forward differences, 0 at the last row/col)."""
    du = np.zeros_like(flow)
    dv = np.zeros_like(flow)
    du[:, :-1] = flow[:, :-1] - flow[:, 1:]
    dv[:-1, :] = flow[:-1, :] - flow[1:, :]
    gradient = (du ** 2).sum(-1) + (dv ** 2).sum(-1)
    return gradient > 0.01 * squared_norm(flow) + 0.002


def occlusion(forward: np.ndarray | None, backward: np.ndarray) -> np.ndarray:
    """bool (H, W) in frame B's coordinates: pixels of B with no trustworthy match in A.

    forward: flow A → B; backward: flow B → A. A pixel is occluded when the forward flow, carried
    to B along the backward flow, does not cancel it (|f̃ + b|² > 0.01(|f̃|² + |b|²) + 0.5), or it
    sits on a motion boundary of the backward flow. forward None leaves the motion-boundary test
    alone (the blend's backward-only flows: its photometric test stands in for the round trip).
    """
    boundary = motion_boundary(backward)
    if forward is None:
        return boundary
    carried = warp(forward, backward)
    mismatch = squared_norm(carried + backward) > 0.01 * (squared_norm(carried) + squared_norm(backward)) + 0.5
    return mismatch | boundary


def reliable(forward: np.ndarray | None, backward: np.ndarray) -> np.ndarray:
    """bool (H, W) in B's coordinates: not occluded (`occlusion`) and its match in A is inside the frame."""
    return ~occlusion(forward, backward) & inside(backward)
