"""`styleforge webcam [--source 0|FILE] [--style NAME ...] [--style-image PAINTING ...]
[--no-window] [--virtual-camera] [--output FILE]`.

Parses flags into `styleforge.media.camera.CameraOptions` (every flag is a field) and calls
`run_camera`; the capture, stylization, keys and sinks live there. Exit codes: 0 done,
2 bad input (no camera, missing file, no GUI, no virtual-camera backend, unknown style).
"""
from __future__ import annotations

import argparse

_KEYS = "keys in the window: 1-9 pick a style, n/p next/previous, t toggles --temporal, q or Esc quits"


def register(subparsers) -> None:
    from ..engine.options import BACKENDS, DEVICES, PRECISIONS
    from ..media.options import TEMPORAL_STRENGTH
    p = subparsers.add_parser(
        "webcam", help="stylize a camera live (window, virtual camera, or file)",
        description="Stylize a camera (or a video file standing in for one) live. Frames are dropped, "
                    "not queued, when stylization is slower than the camera. " + _KEYS + ".")
    p.add_argument("--source", default="0", metavar="INDEX|FILE", help="camera index or video file (default 0)")
    p.add_argument("--style", dest="styles", action="append", default=[], metavar="NAME",
                   help="a style the keys cycle through (repeatable; default: every built-in style)")
    p.add_argument("--style-image", dest="paintings", action="append", default=[], metavar="PAINTING",
                   help="any painting as a style the keys cycle through (arbitrary model; repeatable)")
    p.add_argument("--capture-size", metavar="WxH", help="size to ask of the camera, e.g. 1280x720")
    p.add_argument("--max-side", type=int, default=640, metavar="PX",
                   help="downscale frames to this longer side before stylizing (default 640)")
    p.add_argument("--mirror", action="store_true", help="flip left-right (selfie view)")
    p.add_argument("--temporal", type=float, nargs="?", const=TEMPORAL_STRENGTH, default=0.0, metavar="STRENGTH",
                   help="flow-warped blending of the previous output against flicker (default strength %(const)s)")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--precision", choices=PRECISIONS, default="auto")
    p.add_argument("--backend", choices=BACKENDS, default="auto")
    p.add_argument("--no-window", dest="window", action="store_false",
                   help="no window (headless); the window needs opencv-python, not the -headless "
                        "build the extras install")
    p.add_argument("--virtual-camera", action="store_true", help="also send the frames to a virtual camera")
    p.add_argument("--output", metavar="FILE.mp4", help="also write the styled frames to a video file")
    p.add_argument("--every-frame", dest="realtime", action="store_false",
                   help="a file source hands over every frame instead of playing at its frame rate")
    p.add_argument("--max-frames", type=int, metavar="N", help="stop after N styled frames")
    p.add_argument("--no-fps", dest="show_fps", action="store_false", help="no fps/style text in the window")


def _size(text: str | None) -> tuple[int | None, int | None]:
    if not text:
        return None, None
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--capture-size {text!r}: expected WIDTHxHEIGHT, e.g. 1280x720") from None
    return width, height


def options_from_args(args: argparse.Namespace):
    from ..media.camera import CameraOptions
    width, height = _size(args.capture_size)
    return CameraOptions(
        source=args.source, styles=(*args.styles, *args.paintings), capture_width=width, capture_height=height,
        max_side=args.max_side, mirror=args.mirror, temporal=args.temporal, device=args.device,
        precision=args.precision, backend=args.backend, window=args.window,
        virtual_camera=args.virtual_camera, output=args.output, realtime=args.realtime,
        max_frames=args.max_frames, show_fps=args.show_fps)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from .extras import missing_extra
    console = Console(stderr=True, highlight=False, soft_wrap=True)  # one error = one line
    why = missing_extra("cv2", "styleforge webcam")
    if why:
        console.print(f"[red]error:[/] {escape(why)} (for the window: pip install opencv-python instead)")
        return 2

    from ..media.camera import run_camera
    from ..media.camera_devices import CameraError
    from ..models.checkpoint import CheckpointError
    try:
        options = options_from_args(args)
        stats = run_camera(options)
    except (CameraError, CheckpointError, FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    console.print(f"{stats.frames} frames in {stats.seconds:.1f} s ({stats.fps:.1f} fps), "
                  f"{stats.dropped} dropped" + (f"; wrote {options.output}" if options.output and stats.frames else ""))
    return 0
