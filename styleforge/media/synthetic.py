"""Synthetic video: a camera moving over a still photo, with the exact optical flow of every step.

Frame t shows the photo point p = s_t·x + o_t at pixel x (a zoom by s_t and a shift o_t, the
same for both axes), rendered with bicubic resampling. Because the scene is a flat photo there
is no parallax: the true flow between any two frames follows from the two affine maps, so flow
estimates, warps and the warping-error metric can be checked against ground truth. The camera
path keeps the view inside the photo (a clear error otherwise). Not a model of real video:
no noise, blur, lighting change or independent motion.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

# Named camera paths: (shift per frame in photo pixels (dx, dy), zoom factor per frame).
MOTIONS = {
    "integer-pan": ((2.0, 1.0), 1.0),
    "subpixel-pan": ((1.37, -0.61), 1.0),
    "zoom": ((0.0, 0.0), 0.985),
    "pan-zoom": ((0.8, 0.5), 0.99),
}


@dataclass
class SyntheticClip:
    frames: list[np.ndarray]                    # uint8 (H, W, 3) RGB
    flows: list[tuple[np.ndarray, np.ndarray]]  # per step t-1 → t: (forward t-1→t, backward t→t-1)
    name: str = "synthetic"


def _affine_flow(height: int, width: int, src: tuple[float, float, float],
                 dst: tuple[float, float, float]) -> np.ndarray:
    """Flow from the frame with map `src` = (s, ox, oy) to the frame with map `dst`:
    x ↦ p = s_src·x + o_src ↦ (p − o_dst) / s_dst, minus x."""
    s0, ox0, oy0 = src
    s1, ox1, oy1 = dst
    xs = np.arange(width, dtype=np.float64)[None, :]
    ys = np.arange(height, dtype=np.float64)[:, None]
    fx = (s0 * xs + ox0 - ox1) / s1 - xs
    fy = (s0 * ys + oy0 - oy1) / s1 - ys
    return np.stack(np.broadcast_arrays(fx, fy), -1).astype(np.float32)


def camera_clip(photo: np.ndarray, size: tuple[int, int], frames: int, shift: tuple[float, float],
                zoom: float = 1.0, start_scale: float = 1.0, name: str = "synthetic") -> SyntheticClip:
    """`frames` views of `photo` (uint8 RGB) of `size` = (height, width), centred on the photo at
    the start, the centre moving by `shift` photo pixels and the scale multiplied by `zoom` per
    frame (< 1 zooms in)."""
    height, width = size
    if frames < 2:
        raise ValueError(f"a clip needs at least 2 frames, got {frames}")
    ph, pw = photo.shape[:2]
    cx, cy = (width - 1) / 2, (height - 1) / 2
    maps = []
    for t in range(frames):
        s = start_scale * zoom ** t
        centre = ((pw - 1) / 2 + shift[0] * t, (ph - 1) / 2 + shift[1] * t)
        maps.append((s, centre[0] - s * cx, centre[1] - s * cy))
    for s, ox, oy in maps:
        if ox < 0 or oy < 0 or s * (width - 1) + ox > pw - 1 or s * (height - 1) + oy > ph - 1:
            raise ValueError(f"the camera leaves the {pw}×{ph} photo: use a smaller frame size, "
                             f"fewer frames or a slower motion")
    rendered = [cv2.warpAffine(photo, np.array([[s, 0, ox], [0, s, oy]], np.float64), (width, height),
                               flags=cv2.INTER_CUBIC | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REFLECT)
                for s, ox, oy in maps]
    flows = [(_affine_flow(height, width, maps[t - 1], maps[t]), _affine_flow(height, width, maps[t], maps[t - 1]))
             for t in range(1, frames)]
    return SyntheticClip(rendered, flows, name)


def motion_clip(photo: np.ndarray, motion: str, size: tuple[int, int], frames: int) -> SyntheticClip:
    """A clip along one of the named `MOTIONS`."""
    if motion not in MOTIONS:
        raise ValueError(f"motion must be one of {tuple(MOTIONS)}, got {motion!r}")
    shift, zoom = MOTIONS[motion]
    # Zooming in from a wider view keeps the photo's detail at the frame's scale.
    start = 1.0 if zoom >= 1.0 else 1.0 / zoom ** (frames - 1)
    return camera_clip(photo, size, frames, shift, zoom, start_scale=min(start, 1.5), name=motion)
