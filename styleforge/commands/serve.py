"""`styleforge serve [--host 127.0.0.1] [--port 7860] [--device auto]`: the web app.

Parses flags into one `ServeOptions` (every flag is a field) and calls `styleforge.app.serve`.
Needs the `web` extra (`pip install "styleforge[web]"`); without gradio it says so and exits 2.
The app binds to localhost unless `--host` says otherwise and stops cleanly on Ctrl-C or SIGTERM;
a shutdown still running a minute later (`app.server.SHUTDOWN_GRACE_S`) dumps every thread's stack
and exits 1.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys

from ..engine.options import BACKENDS, DEVICES, PRECISIONS

MB = 1024 * 1024


def register(subparsers) -> None:
    from ..app.options import ServeOptions
    d = ServeOptions()
    p = subparsers.add_parser("serve", help="run the web app (Gradio) in your browser",
                              description="Serve the StyleForge web app (needs styleforge[web]).")
    p.add_argument("--host", default=d.host,
                   help=f"address to bind (default {d.host}: this machine only; 0.0.0.0 = every interface)")
    p.add_argument("--port", type=int, default=d.port)
    p.add_argument("--device", choices=DEVICES, default=d.device)
    p.add_argument("--precision", choices=PRECISIONS, default=d.precision)
    p.add_argument("--backend", choices=BACKENDS, default=d.backend)
    p.add_argument("--max-upload-mb", type=float, default=d.max_upload_bytes / MB, metavar="MB",
                   help=f"largest upload (default {d.max_upload_bytes // MB})")
    p.add_argument("--max-pixels", type=int, default=d.max_pixels, metavar="N",
                   help=f"largest image in pixels (default {d.max_pixels:,})")
    p.add_argument("--max-video-seconds", type=float, default=d.max_video_seconds, metavar="S")
    p.add_argument("--webcam-max-side", type=int, default=d.webcam_max_side, metavar="PX")
    p.add_argument("--concurrency", type=int, metavar="N",
                   help="engine requests at once (default: 1 on a GPU, 2 on a CPU)")
    p.add_argument("--temp-dir", metavar="DIR",
                   help="the app's working folder (default: a fresh one, removed at exit)")
    p.add_argument("--vgg-weights", metavar="PATH", help="VGG16 weights for the training tab")
    p.add_argument("--train-content-dir", metavar="DIR", help="content photos for the training tab")
    p.add_argument("--train-steps", type=int, default=d.train_steps, metavar="N",
                   help="default steps of a training job")


def options_from_args(args: argparse.Namespace):
    from ..app.options import ServeOptions
    return ServeOptions(host=args.host, port=args.port, device=args.device, precision=args.precision,
                        backend=args.backend, max_upload_bytes=int(args.max_upload_mb * MB),
                        max_pixels=args.max_pixels, max_video_seconds=args.max_video_seconds,
                        webcam_max_side=args.webcam_max_side, concurrency=args.concurrency,
                        temp_dir=args.temp_dir, vgg_weights=args.vgg_weights,
                        train_content_dir=args.train_content_dir, train_steps=args.train_steps)


def run(args: argparse.Namespace) -> int:
    try:
        options = options_from_args(args)
    except ValueError as exc:
        print(f"styleforge serve: {exc}", file=sys.stderr)
        return 2
    # find_spec, not import: gradio must be imported only after the app sets its cache folder.
    if importlib.util.find_spec("gradio") is None:
        print('styleforge serve: the web app needs gradio: pip install "styleforge[web]"', file=sys.stderr)
        return 2
    from ..app import serve
    print("styleforge serve: starting…", file=sys.stderr, flush=True)
    serve(options, say=lambda message: print(f"styleforge serve: {message}", file=sys.stderr, flush=True),
          on_ready=lambda url: print(f"StyleForge is serving on {url}  (Ctrl-C stops it)",
                                              flush=True),
          exit_watchdog=True)   # a hung shutdown ends the process with stacks on stderr
    return 0
