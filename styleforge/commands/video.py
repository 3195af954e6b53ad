"""`styleforge video IN -o OUT [--style NAME] [--crf N] [--preset P] [--start S] [--duration S]`.

Parses flags into `StylizeOptions` and `VideoOptions` and calls `styleforge.api.stylize_video`,
showing frames/s on a progress bar. Not here: demuxing, encoding, audio (`styleforge.media.video`).
Exit status: 0 done (or the output exists and is kept, as `stylize` does), 1 the video failed,
2 bad flags or an unusable style/device.
"""
from __future__ import annotations

import argparse
import time

from .arguments import _checked, _number_in, add_pipeline_arguments


def register(subparsers) -> None:
    from ..media.options import (
        TEMPORAL_FLOW_CHECK,
        TEMPORAL_FLOW_PRESET,
        TEMPORAL_FLOW_PRESETS,
        TEMPORAL_FLOW_SIZE,
        TEMPORAL_FLOW_THREADS,
        TEMPORAL_FLOWS,
        TEMPORAL_STRENGTH,
        VIDEO_CODECS,
        VIDEO_DECODERS,
    )
    from .arguments import register_engine_arguments
    p = subparsers.add_parser(
        "video", help="apply a style to a video (audio and metadata kept)",
        description="Stylize every frame of a video; audio and subtitle packets are copied as they are.")
    p.add_argument("input", metavar="IN", help="any video PyAV (FFmpeg) can read")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output video (.mp4, .mov, .mkv, .webm, .avi); written only when complete")
    register_engine_arguments(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing output (default: keep it)")
    p.add_argument("--video-codec", dest="video_codec", choices=("auto", *VIDEO_CODECS), default="auto",
                   help="auto (default): h264, or for .webm av1 (else vp9)")
    p.add_argument("--crf", type=_checked(_number_in(0, 63, int), "integer in 0..63"), default=None,
                   help="encoder quality (lower is better; default: the encoder's)")
    p.add_argument("--preset", default=None,
                   help="encoder speed preset, e.g. veryfast, medium (default: superfast for h264/h265)")
    p.add_argument("--decoder", choices=VIDEO_DECODERS, default="cpu",
                   help="video decoder: FFmpeg's on the CPU, or NVIDIA's NVDEC (cuda)")
    p.add_argument("--start", type=_checked(_number_in(0, 1e9), "seconds ≥ 0"), default=0.0,
                   metavar="S", help="begin S seconds into the input")
    p.add_argument("--duration", type=_checked(_number_in(1e-6, 1e9), "seconds > 0"), default=None,
                   metavar="S", help="keep S seconds")
    p.add_argument("--temporal", type=_checked(_number_in(0, 1), "number in 0..1"), nargs="?",
                   const=TEMPORAL_STRENGTH, default=0.0, metavar="STRENGTH",
                   help="blend the flow-warped previous output in, against flicker (default strength %(const)s)")
    p.add_argument("--temporal-flow", choices=TEMPORAL_FLOWS, default="dis",
                   help="--temporal's optical flow: dis (OpenCV, CPU, default) or torch (on the GPU; CUDA only)")
    p.add_argument("--temporal-flow-preset", choices=TEMPORAL_FLOW_PRESETS, default=TEMPORAL_FLOW_PRESET,
                   help="DIS preset of --temporal's flow (default %(default)s)")
    p.add_argument("--temporal-flow-size", type=_checked(_number_in(16, 1e6, int), "integer ≥ 16"),
                   default=TEMPORAL_FLOW_SIZE, metavar="PX",
                   help="--temporal's flow runs on frames shrunk to this longer side (default %(default)s)")
    p.add_argument("--temporal-flow-threads", type=_checked(_number_in(1, 1024, int), "integer ≥ 1"),
                   default=TEMPORAL_FLOW_THREADS, metavar="N",
                   help="OpenCV threads per DIS call; the decode workers run pairs in parallel (default %(default)s)")
    p.add_argument("--temporal-flow-check", action=argparse.BooleanOptionalAction, default=TEMPORAL_FLOW_CHECK,
                   help="compute --temporal's forward flow too, for the forward-backward occlusion test; "
                        "--no-temporal-flow-check: the backward flow alone, half the flow's cost "
                        "(default: %s)" % ("on" if TEMPORAL_FLOW_CHECK else "off"))
    add_pipeline_arguments(p, image_codec=False)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from ..api import stylize_video
    from ..media.video import VideoError
    from ..models.checkpoint import CheckpointError
    from .arguments import options_from_args
    from .extras import missing_extra
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    why = missing_extra("av", "styleforge video")
    if why:
        console.print(f"[bold red]error:[/] {escape(why)}")
        return 2
    try:
        options = options_from_args(args)
    except (CheckpointError, ValueError) as exc:
        console.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    if Path(args.output).exists() and not options.overwrite:   # the rule `stylize` follows
        console.print(f"[yellow]skipped {escape(args.input)}: {escape(args.output)} exists "
                      "(--overwrite to replace it)[/]")
        return 0
    progress = Progress(TextColumn("stylizing"), BarColumn(), TextColumn("{task.completed} frames"),
                        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console,
                        transient=True)
    task = progress.add_task("video", total=None, rate="")
    start = time.perf_counter()

    def report(done: int, total: int | None) -> None:
        progress.update(task, completed=done, total=total,
                        rate=f"{done / (time.perf_counter() - start):.1f} frames/s")

    from ..notices import engine_notices
    try:
        with progress, engine_notices(lambda message: console.print(escape(message), style="dim")):
            result = stylize_video(args.input, args.output, options=options, progress=report,
                                   codec=args.video_codec, crf=args.crf, preset=args.preset,
                                   start=args.start, duration=args.duration, temporal=args.temporal,
                                   temporal_flow=args.temporal_flow, temporal_flow_preset=args.temporal_flow_preset,
                                   temporal_flow_size=args.temporal_flow_size,
                                   temporal_flow_threads=args.temporal_flow_threads,
                                   temporal_flow_check=args.temporal_flow_check, decoder=args.decoder,
                                   workers=args.workers,
                                   depth=args.queue_depth)
    except VideoError as exc:
        console.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 1
    except (CheckpointError, RuntimeError, ValueError) as exc:
        console.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    console.print(f"{result.frames} frames in {result.seconds:.1f} s ({result.fps:.1f} frames/s) "
                  f"→ {result.output}")
    return 0
