"""The temporal benchmark's clips: real photos set in motion at run time, written as H.264 + AAC.

Five scenes, each from still photos (the shipped `styleforge/assets/*.jpg` unless others are
given), rendered by OpenCV at any size: `pan` (the camera slides over a photo), `zoom` (it
closes in), `subject` (a still camera over one photo while a cut-out of another, an ellipse
with a soft edge, crosses it), `rotation` (the camera turns about the view's centre) and
`cut` (a pan over one photo, then a hard cut to a pan over another). The photo is first scaled
just enough for the scene's views to stay inside it (2% margin; for the rotation its shorter
side covers the view's diagonal); the shipped photos are 300–512 px, so at 1080p they are
upscaled 3–7× and their finest detail is the network's, not the camera's. Motion is given as a share of the frame per
frame, so a scene moves alike at every size. `write_clip` encodes frames with a sine tone as
the audio track, so the video path's audio remux is part of what is timed. No video file is
committed: the bench makes its clips each run. Not here: the measurements (`temporal.py`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

SCENES = ("pan", "zoom", "subject", "rotation", "cut")
FPS = 30
PAN_PER_FRAME = (0.0012, 0.0005)    # of the frame's width, height
ZOOM_PER_FRAME = 0.996             # view scale (< 1 closes in)
TURN_PER_FRAME = 0.25              # degrees
SUBJECT_PER_FRAME = 0.005          # of the frame's width
MARGIN = 1.02                      # canvas ÷ the extent the views need


def _canvas(photo: np.ndarray, need: tuple[float, float]) -> np.ndarray:
    """`photo` scaled to cover `need` = (height, width) with MARGIN."""
    scale = MARGIN * max(need[0] / photo.shape[0], need[1] / photo.shape[1])
    return cv2.resize(photo, (round(photo.shape[1] * scale), round(photo.shape[0] * scale)),
                      interpolation=cv2.INTER_CUBIC if scale > 1 else cv2.INTER_AREA)


def _view(canvas: np.ndarray, size: tuple[int, int], centre: tuple[float, float], scale: float = 1.0,
          degrees: float = 0.0) -> np.ndarray:
    """The view of `size` whose centre sits at canvas point `centre`, `scale` canvas px per view
    px, turned by `degrees`."""
    height, width = size
    a = math.radians(degrees)
    c, s = scale * math.cos(a), scale * math.sin(a)
    cx, cy = (width - 1) / 2, (height - 1) / 2
    # view x ↦ canvas p = R·S·(x − c_view) + centre
    matrix = np.array([[c, -s, centre[0] - c * cx + s * cy], [s, c, centre[1] - s * cx - c * cy]])
    return cv2.warpAffine(canvas, matrix, (width, height), flags=cv2.INTER_CUBIC | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_REFLECT)


def _pan(photo, size, frames, direction=1.0):
    height, width = size
    dx, dy = PAN_PER_FRAME[0] * width, PAN_PER_FRAME[1] * height
    canvas = _canvas(photo, (height + dy * frames, width + dx * frames))
    mid = ((canvas.shape[1] - 1) / 2, (canvas.shape[0] - 1) / 2)
    half = (frames - 1) / 2
    return [_view(canvas, size, (mid[0] + direction * dx * (t - half), mid[1] + direction * dy * (t - half)))
            for t in range(frames)]


def _subject(background, cutout, size, frames):
    """A still view of `background` with an elliptical cut-out of `cutout` crossing it."""
    height, width = size
    still = _view(background, size, ((background.shape[1] - 1) / 2, (background.shape[0] - 1) / 2))
    side = max(8, height // 3)
    patch = cv2.resize(cutout, (side * 4 // 3, side), interpolation=cv2.INTER_AREA).astype(np.float32)
    alpha = np.zeros(patch.shape[:2], np.float32)
    cv2.ellipse(alpha, (patch.shape[1] // 2, side // 2), (patch.shape[1] // 2 - 2, side // 2 - 2), 0, 0, 360, 1.0, -1)
    alpha = cv2.GaussianBlur(alpha, (0, 0), max(1.0, side / 60))[..., None]
    out = []
    for t in range(frames):
        x = width * 0.1 + SUBJECT_PER_FRAME * width * t
        y = height * 0.35 + height * 0.08 * math.sin(t / 9)
        shift = np.array([[1, 0, x], [0, 1, y]], np.float32)   # sub-pixel placement
        moved = cv2.warpAffine(patch, shift, (width, height), flags=cv2.INTER_LINEAR)
        mask = cv2.warpAffine(alpha, shift, (width, height), flags=cv2.INTER_LINEAR)[..., None]
        out.append(np.clip(still * (1 - mask) + moved * mask + 0.5, 0, 255).astype(np.uint8))
    return out


def render_scene(scene: str, photos: list[np.ndarray], size: tuple[int, int], frames: int,
                 cut_at: int | None = None) -> list[np.ndarray]:
    """`frames` uint8 (H, W, 3) RGB frames of `scene` at `size` = (height, width); `cut_at`: the
    first frame after the cut (default: the middle)."""
    if scene not in SCENES:
        raise ValueError(f"scene must be one of {SCENES}, got {scene!r}")
    if frames < 2 or not photos:
        raise ValueError("a clip needs at least 2 frames and one photo")
    pick = [photos[i % len(photos)] for i in range(3)]
    if scene == "pan":
        return _pan(pick[0], size, frames)
    if scene == "subject":
        return _subject(_canvas(pick[1], size), pick[2], size, frames)
    if scene == "cut":
        cut_at = frames // 2 if cut_at is None else cut_at
        return _pan(pick[0], size, cut_at) + _pan(pick[2], size, frames - cut_at, -1.0)
    diagonal = math.hypot(*size)
    canvas = _canvas(pick[1] if scene == "rotation" else pick[0], (diagonal, diagonal) if scene == "rotation" else size)
    mid = ((canvas.shape[1] - 1) / 2, (canvas.shape[0] - 1) / 2)
    if scene == "zoom":
        return [_view(canvas, size, mid, ZOOM_PER_FRAME ** t) for t in range(frames)]
    return [_view(canvas, size, mid, 1.0, TURN_PER_FRAME * t) for t in range(frames)]


def write_clip(path: str | Path, frames: list[np.ndarray], fps: int = FPS, crf: int = 18,
               preset: str = "superfast") -> Path:
    """H.264 (yuv420p) with a stereo AAC tone as long as the video, as a phone or camera writes."""
    import av
    path = Path(path)
    height, width = frames[0].shape[:2]
    rate = 48000
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": preset, "crf": str(crf)}
        sound = out.add_stream("aac", rate=rate)
        sound.layout = "stereo"
        for i, pixels in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(pixels), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, fps)
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        samples = rate * len(frames) // fps
        tone = (0.2 * np.sin(2 * np.pi * 440 * np.arange(samples) / rate)).astype(np.float32)
        tone = np.stack([tone, tone])
        for start in range(0, samples, 1024):
            chunk = av.AudioFrame.from_ndarray(np.ascontiguousarray(tone[:, start:start + 1024]), format="fltp",
                                               layout="stereo")
            chunk.sample_rate, chunk.pts, chunk.time_base = rate, start, Fraction(1, rate)
            for packet in sound.encode(chunk):
                out.mux(packet)
        for packet in sound.encode(None):
            out.mux(packet)
    return path


def read_clip(path: str | Path, frames: int | None = None) -> list[np.ndarray]:
    """The first `frames` frames of a video as uint8 RGB (all of them with None)."""
    import av
    out = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            out.append(frame.to_ndarray(format="rgb24"))
            if frames is not None and len(out) >= frames:
                break
    return out
