"""Start the web app, serve until SIGINT/SIGTERM, then shut down cleanly.

`serve(options)` makes the app's temp folder, points Gradio's upload cache into it (Gradio
takes that folder only from `GRADIO_TEMP_DIR`, read when gradio is imported, so it is set
before the import), and launches with a bounded request queue; the gallery's missing thumbnails
(and with them the default style's engine) are drawn in the background meanwhile
(`gallery.Thumbnails`), so the page answers within seconds and fills its gallery as they come.
`say` hears what it is doing until then. On a signal it stops accepting requests, answers every
request still waiting with "the server is shutting down" (`inflight.py`), cancels a running
training job and removes the folder it created; with `exit_watchdog`, engine work abandoned
mid-call ends the process at once with status 0 (a thread left inside PyTorch at interpreter
exit aborts it). With `exit_watchdog` (the CLI passes
it) shutdown is bounded: if the process is still alive `SHUTDOWN_GRACE_S` after serving ends,
every thread's stack goes to stderr and it exits with status 1 (a hung exit is a bug to see, not
a server to kill -9 by hand); in-process callers such as tests leave it off, since it would kill
their process. Not here: the layout (`layout.py`).
"""
from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable

from .files import AppFiles
from .inflight import drain
from .options import ServeOptions, engine_concurrency

SHUTDOWN_GRACE_S = 60   # > the training job's 30 s cancel wait
QUEUE_SIZE = 256   # waiting requests beyond this are refused ("queue full") instead of piling up


def build_app(options: ServeOptions, files: AppFiles, say: Callable[[str], None] = lambda message: None):
    """(gr.Blocks, Handlers, Thumbnails) for these options; the caller launches, starts the
    thumbnails drawing and closes."""
    from ..switches import configure_library
    # Gradio reads these at import: its uploads stay in our folder, and no calls home.
    configure_library({"GRADIO_TEMP_DIR": str(files.upload_dir), "GRADIO_ANALYTICS_ENABLED": "False"})
    say("loading the web app (gradio, torch)…")
    from ..engine.backends import resolve_device
    from .gallery import Thumbnails
    from .handlers import Handlers
    from .layout import build_blocks

    device = resolve_device(options.device)
    handlers = Handlers(options, files, device.type)
    if not handlers.style_names:
        raise RuntimeError("no styles are installed; nothing to serve")
    engine = dict(device=options.device, precision=options.precision, backend=options.backend)
    thumbnails = Thumbnails(_styles(), files.sub("thumbs"), say, **engine)
    concurrency = engine_concurrency(options, device.type)
    demo = build_blocks(handlers, thumbnails, concurrency)
    demo.queue(default_concurrency_limit=concurrency, max_size=QUEUE_SIZE)
    return demo, handlers, thumbnails


def _styles():
    from ..models.registry import list_styles
    return list_styles()


def launch(demo, options: ServeOptions, files: AppFiles) -> str:
    """Start serving in background threads; returns the local URL."""
    demo.launch(server_name=options.host, server_port=options.port, prevent_thread_lock=True,
                max_file_size=options.max_upload_bytes, show_error=True, quiet=True,
                allowed_paths=[str(files.sub("outputs")), str(files.sub("thumbs"))],
                ssr_mode=False, share=False, inbrowser=False)
    return demo.local_url


def serve(options: ServeOptions, on_ready: Callable[[str], None] | None = None,
          stop: threading.Event | None = None, exit_watchdog: bool = False,
          say: Callable[[str], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM (or `stop` is set, for callers not on the main thread).
    `exit_watchdog`: the process is about to exit, so end it (status 1) if shutdown hangs.
    `say`: one line at a time, what the start is doing (the CLI prints them)."""
    stop = stop or threading.Event()
    files = AppFiles(options.temp_dir)
    demo = handlers = None
    previous = {}
    try:
        demo, handlers, thumbnails = build_app(options, files, say or (lambda message: None))
        url = launch(demo, options, files)
        thumbnails.start()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, lambda *_: stop.set())
        if on_ready is not None:
            on_ready(url)
        # Poll: a signal the kernel hands to another thread (CUDA and Gradio start many) does not
        # wake a main thread blocked in an untimed wait, so its Python handler would never run.
        while not stop.wait(0.5):
            pass
    finally:
        if exit_watchdog:            # only the CLI's process may be ended from here
            faulthandler.dump_traceback_later(SHUTDOWN_GRACE_S, exit=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if handlers is not None:
            handlers.inflight.shutdown()          # each waiting client gets its answer now
            if demo is not None:
                drain(handlers.inflight, demo)
            handlers.job.cancel(wait=30)
        if demo is not None:
            demo.close()
        files.remove()
    if exit_watchdog and handlers.inflight.busy():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)   # abandoned engine work: no interpreter teardown under a running PyTorch call
