"""Live stylization: a camera (or a video file standing in for one) → styled frames on screen,
to a virtual camera, to a video file or to a callback.

A reader thread keeps only the newest frame: when stylization is slower than the camera, older
frames are dropped (and counted), never queued, so the picture stays live. A file source plays
at its own frame rate like a camera unless `realtime=False`, which hands over every frame (tests,
offline use). Keys in the window: 1–9 pick a style, n/p next/previous, t toggles temporal
blending, q or Esc quits. The window needs an OpenCV with GUI support (`opencv-python`; the
headless wheel has none, so `window=False` is then required); the virtual camera needs
`pyvirtualcam` and a backend (v4l2loopback, OBS). This module is the frame loop; not here: the
reader thread, the window and the outputs (`media.camera_devices`), the CLI (`commands/webcam.py`)
and the file/video pipeline.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import cv2
import numpy as np
import torch

from .camera_devices import (
    WINDOW,
    CameraError,
    LatestFrame,
    VideoFileSink,
    check_gui,
    open_capture,
    open_virtual_camera,
    overlay,
)
from .temporal import TemporalBlender

QUIT_KEYS = (ord("q"), 27)


@dataclass(frozen=True)
class CameraOptions:
    source: str = "0"                   # camera index, or a video file standing in for the camera
    styles: tuple[str, ...] = ()        # styles the keys cycle through; empty = every built-in style
    # A style that is an image file (.jpg, .png, …) is a painting for the arbitrary model.
    capture_width: int | None = None    # size asked of the camera (it may give another)
    capture_height: int | None = None
    max_side: int | None = 640          # frames are downscaled to this longer side before stylizing
    mirror: bool = False                # flip left–right (a selfie view)
    temporal: float = 0.0               # TemporalBlender strength; 0 = off
    device: str = "auto"
    precision: str = "auto"
    backend: str = "auto"
    window: bool = True                 # show the frames in an OpenCV window
    virtual_camera: bool = False        # send the frames to a virtual camera (pyvirtualcam)
    output: str | None = None           # also write the styled frames to this video file
    realtime: bool = True               # a file source plays at its frame rate (frames dropped)
    max_frames: int | None = None       # stop after this many styled frames
    show_fps: bool = True               # fps and style name drawn on the window's copy

    def __post_init__(self):
        if not 0.0 <= self.temporal < 1.0:
            raise ValueError(f"temporal must be in [0, 1), got {self.temporal}")
        if self.max_side is not None and self.max_side < 16:
            raise ValueError(f"max_side must be ≥ 16, got {self.max_side}")
        if self.max_frames is not None and self.max_frames < 1:
            raise ValueError(f"max_frames must be ≥ 1, got {self.max_frames}")


@dataclass
class CameraStats:
    frames: int = 0                     # styled and delivered
    dropped: int = 0                    # read from the source but replaced by a newer one
    seconds: float = 0.0
    styles_used: list[str] = field(default_factory=list)   # style of each delivered frame

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


def _stylize_frame(stylizer, rgb: np.ndarray) -> np.ndarray:
    tensor = torch.from_numpy(rgb).permute(2, 0, 1).unsqueeze(0).float()
    out = stylizer(tensor)[0].round().clamp(0, 255).to(torch.uint8)
    return out.permute(1, 2, 0).contiguous().numpy()


def _fit(rgb: np.ndarray, max_side: int | None, mirror: bool) -> np.ndarray:
    if mirror:
        rgb = rgb[:, ::-1]
    height, width = rgb.shape[:2]
    if max_side and max(height, width) > max_side:
        scale = max_side / max(height, width)
        rgb = cv2.resize(rgb, (max(1, round(width * scale)), max(1, round(height * scale))),
                         interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(rgb)


def next_style(key: int, current: int, count: int) -> int:
    """The style index after `key`: 1–9 pick, n/p step (wrapping); other keys change nothing."""
    if ord("1") <= key <= ord("9") and key - ord("1") < count:
        return key - ord("1")
    if key == ord("n"):
        return (current + 1) % count
    if key == ord("p"):
        return (current - 1) % count
    return current


def run_camera(options: CameraOptions, *, on_frame: Callable[[np.ndarray, str], None] | None = None,
               keys: Callable[[int], int] | None = None) -> CameraStats:
    """Stylize the source until it ends, `max_frames`, or q/Esc. `on_frame(rgb, style)` receives
    each styled frame; `keys(frame_index) -> key code` (−1: none) stands in for the keyboard when
    there is no window (tests, scripted demos)."""
    from ..api import get_stylizer, is_painting
    from ..engine.options import StylizeOptions
    from ..models.registry import list_styles

    styles = list(options.styles) or [info.name for info in list_styles()]
    if not styles:
        raise CameraError("no styles to show: pass --style NAME (or install the built-in styles)")
    engine = StylizeOptions(device=options.device, precision=options.precision, backend=options.backend)
    stylizers = {}

    def stylizer(name: str):
        if name not in stylizers:   # the first use of a style loads it; later switches are instant
            look = {"style_images": ((name, 1.0),)} if is_painting(name) else {"style": name}
            stylizers[name] = get_stylizer(dataclasses.replace(engine, **look))
        return stylizers[name]

    stylizer(styles[0])             # fail on a bad style before the camera turns on
    if options.window:
        check_gui()
    capture = open_capture(options.source, options.capture_width, options.capture_height)
    source_fps = capture.get(cv2.CAP_PROP_FPS) or 30.0
    is_file = not options.source.isdigit()
    reader = LatestFrame(capture, pace=source_fps if is_file and options.realtime else 0.0,
                         keep_all=is_file and not options.realtime)
    sink = VideoFileSink(options.output, source_fps) if options.output else None
    blender = TemporalBlender(strength=options.temporal) if options.temporal > 0 else None
    temporal_on = blender is not None
    virtual = None
    stats = CameraStats()
    index, fps, last = 0, 0.0, time.perf_counter()
    start = last
    finished = False
    try:
        while options.max_frames is None or stats.frames < options.max_frames:
            bgr = reader.take()
            if bgr is None:
                break
            rgb = _fit(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), options.max_side, options.mirror)
            name = styles[index]
            out = _stylize_frame(stylizer(name), rgb)
            if blender is not None and temporal_on:
                out = blender(rgb, out)
            stats.frames += 1
            stats.styles_used.append(name)
            now = time.perf_counter()
            fps = 1.0 / max(now - last, 1e-6) if fps == 0 else 0.9 * fps + 0.1 / max(now - last, 1e-6)
            last = now
            if sink is not None:
                sink.write(out)
            if options.virtual_camera:
                if virtual is None:
                    virtual = open_virtual_camera(out.shape[1], out.shape[0], source_fps)
                if (out.shape[1], out.shape[0]) == (virtual.width, virtual.height):
                    virtual.send(out)
            if on_frame is not None:
                on_frame(out, name)
            key = -1
            if options.window:
                text = f"{name}  {fps:.1f} fps  dropped {reader.dropped}" + ("  temporal" if temporal_on else "")
                shown = overlay(out, text) if options.show_fps else cv2.cvtColor(out, cv2.COLOR_RGB2BGR)
                cv2.imshow(WINDOW, shown)
                key = cv2.waitKey(1) & 0xFF
                if cv2.getWindowProperty(WINDOW, cv2.WND_PROP_VISIBLE) < 1:
                    break
            elif keys is not None:
                key = keys(stats.frames - 1)
            if key in QUIT_KEYS:
                break
            if key == ord("t") and blender is not None:
                temporal_on = not temporal_on
                blender.reset()
            chosen = next_style(key, index, len(styles))
            if chosen != index:
                index = chosen
                if blender is not None:
                    blender.reset()     # the old style's texture must not bleed into the new one
        finished = True
    finally:
        reader.close()
        stats.dropped = reader.dropped
        stats.seconds = time.perf_counter() - start
        if sink is not None:
            sink.close(keep=finished and stats.frames > 0)
        if virtual is not None:
            virtual.close()
        if options.window:
            cv2.destroyAllWindows()
    return stats
