"""Live stylization: a camera (or a video file standing in for one) → styled frames on screen,
to a virtual camera, to a video file or to a callback.

A reader thread keeps only the newest frame: when stylization is slower than the camera, older
frames are dropped (and counted), never queued, so the picture stays live. A file source plays
at its own frame rate like a camera unless `realtime=False`, which hands over every frame (tests,
offline use). Keys in the window: 1–9 pick a style, n/p next/previous, t toggles temporal
blending, q or Esc quits. The window needs an OpenCV with GUI support (`opencv-python`; the
headless wheel has none, so `window=False` is then required); the virtual camera needs
`pyvirtualcam` and a backend (v4l2loopback, OBS). Not here: the CLI (`commands/webcam.py`) and
the file/video pipeline.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import torch

from .temporal import TemporalBlender

QUIT_KEYS = (ord("q"), 27)
WINDOW = "styleforge webcam"


class CameraError(RuntimeError):
    """The camera, file, window or virtual camera cannot be used; the message says why."""


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


def open_capture(source: str, width: int | None = None, height: int | None = None) -> cv2.VideoCapture:
    if source.isdigit():
        capture = cv2.VideoCapture(int(source))
        what = f"camera {source}"
    else:
        if not Path(source).is_file():
            raise CameraError(f"--source {source!r}: no such file (give a camera index like 0, or a video file)")
        capture = cv2.VideoCapture(source)
        what = source
    if not capture.isOpened():
        raise CameraError(f"cannot open {what}: no such device, in use, or no permission "
                          "(a file: OpenCV cannot decode it)")
    if width:
        capture.set(cv2.CAP_PROP_FRAME_WIDTH, width)
    if height:
        capture.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
    return capture


class LatestFrame:
    """Reads the capture on its own thread and keeps the newest frame only (`take` blocks for a
    new one, None at the end). With `pace` > 0 a file is read at that frame rate, as a camera
    would deliver it; with `keep_all` the reader waits for each frame to be taken instead."""

    def __init__(self, capture: cv2.VideoCapture, pace: float = 0.0, keep_all: bool = False):
        self._capture, self._pace, self._keep_all = capture, pace, keep_all
        self._cond = threading.Condition()
        self._frame: np.ndarray | None = None
        self._ended = False
        self._stop = False
        self.dropped = 0
        self._thread = threading.Thread(target=self._read, name="camera-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        start = time.perf_counter()
        count = 0
        while not self._stop:
            ok, frame = self._capture.read()
            if not ok:
                break
            count += 1
            if self._pace:
                delay = start + count / self._pace - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            with self._cond:
                while self._keep_all and self._frame is not None and not self._stop:
                    self._cond.wait()
                if self._frame is not None:
                    self.dropped += 1
                self._frame = frame
                self._cond.notify_all()
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def take(self) -> np.ndarray | None:
        with self._cond:
            while self._frame is None and not self._ended:
                self._cond.wait()
            frame, self._frame = self._frame, None
            self._cond.notify_all()
            return frame

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout=5)
        self._capture.release()


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


class VideoFileSink:
    """Styled frames to a video file (mp4v in .mp4, MJPG in .avi) that appears only when complete."""

    def __init__(self, path: str, fps: float):
        self.path = Path(path)
        self._tmp = self.path.with_name(f".{self.path.stem}.partial{self.path.suffix}")
        self._fps = fps
        self._writer: cv2.VideoWriter | None = None

    def write(self, rgb: np.ndarray) -> None:
        if self._writer is None:
            fourcc = cv2.VideoWriter_fourcc(*("MJPG" if self.path.suffix.lower() == ".avi" else "mp4v"))
            self._writer = cv2.VideoWriter(str(self._tmp), fourcc, self._fps, (rgb.shape[1], rgb.shape[0]))
            if not self._writer.isOpened():
                raise CameraError(f"cannot write {self.path}: use a .mp4 or .avi name in a writable folder")
        self._writer.write(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))

    def close(self, keep: bool) -> None:
        if self._writer is None:
            return
        self._writer.release()
        if keep:
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)


def _open_virtual_camera(width: int, height: int, fps: float):
    try:
        import pyvirtualcam
    except ImportError:
        raise CameraError("--virtual-camera needs pyvirtualcam: pip install pyvirtualcam") from None
    try:
        return pyvirtualcam.Camera(width=width, height=height, fps=fps, fmt=pyvirtualcam.PixelFormat.RGB)
    except RuntimeError as exc:
        raise CameraError(f"no virtual camera backend ({exc}); on Linux load v4l2loopback, "
                          "elsewhere install OBS") from None


def _check_gui() -> None:
    try:
        cv2.namedWindow(WINDOW, cv2.WINDOW_AUTOSIZE)
    except cv2.error:
        raise CameraError("this OpenCV has no GUI (opencv-python-headless): install opencv-python "
                          "for the window, or use --no-window with --virtual-camera or --output") from None


def _overlay(rgb: np.ndarray, text: str) -> np.ndarray:
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    cv2.putText(bgr, text, (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(bgr, text, (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA)
    return bgr


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
        _check_gui()
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
                    virtual = _open_virtual_camera(out.shape[1], out.shape[0], source_fps)
                if (out.shape[1], out.shape[0]) == (virtual.width, virtual.height):
                    virtual.send(out)
            if on_frame is not None:
                on_frame(out, name)
            key = -1
            if options.window:
                text = f"{name}  {fps:.1f} fps  dropped {reader.dropped}" + ("  temporal" if temporal_on else "")
                shown = _overlay(out, text) if options.show_fps else cv2.cvtColor(out, cv2.COLOR_RGB2BGR)
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
