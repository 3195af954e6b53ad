"""Where live frames come from and go to: the camera (or a file standing in for one), the window,
a virtual camera and a video file.

`open_capture` opens a camera index or a file with OpenCV; `LatestFrame` reads it on its own
thread and keeps only the newest frame (dropped frames are counted), or every frame, paced or not.
`VideoFileSink` writes a video that appears only when complete; `open_virtual_camera` opens
pyvirtualcam (optional); `check_gui` opens the OpenCV window and `overlay` draws the status line
on its copy. Each failure to open is a `CameraError` whose message says what to do. Not here:
the frame loop, styles and keys (`media.camera`).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import cv2
import numpy as np

WINDOW = "styleforge webcam"


class CameraError(RuntimeError):
    """The camera, file, window or virtual camera cannot be used; the message says why."""


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


def open_virtual_camera(width: int, height: int, fps: float):
    try:
        import pyvirtualcam
    except ImportError:
        raise CameraError("--virtual-camera needs pyvirtualcam: pip install pyvirtualcam") from None
    try:
        return pyvirtualcam.Camera(width=width, height=height, fps=fps, fmt=pyvirtualcam.PixelFormat.RGB)
    except RuntimeError as exc:
        raise CameraError(f"no virtual camera backend ({exc}); on Linux load v4l2loopback, "
                          "elsewhere install OBS") from None


def check_gui() -> None:
    try:
        cv2.namedWindow(WINDOW, cv2.WINDOW_AUTOSIZE)
    except cv2.error:
        raise CameraError("this OpenCV has no GUI (opencv-python-headless): install opencv-python "
                          "for the window, or use --no-window with --virtual-camera or --output") from None


def overlay(rgb: np.ndarray, text: str) -> np.ndarray:
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    cv2.putText(bgr, text, (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(bgr, text, (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA)
    return bgr
