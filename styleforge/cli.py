"""`styleforge` command line: a thin layer that parses flags and calls the library.

Each subcommand lives in `styleforge/commands/<name>.py` with two functions:
`register(subparsers)` adds its parser (cheap: no heavy imports), and `run(args) -> int`
does the work and returns the exit code.
"""
from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ("stylize", "video", "styles", "train", "train_arbitrary", "eval_arbitrary", "bench", "profile", "build",
            "serve", "webcam", "export")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="styleforge", description="Fast neural style transfer: stylize, train, benchmark.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = _command_module(name)
        if module is not None:
            module.register(sub)
    return parser


def _command_module(name: str):
    """The subcommand's module, or None while that module has not been written yet.

    Only the module's own absence is forgiven: an ImportError raised inside it is a real bug.
    """
    qualified = f"styleforge.commands.{name}"
    try:
        return importlib.import_module(qualified)
    except ModuleNotFoundError as exc:
        if exc.name == qualified:
            return None
        raise


def _version() -> str:
    from . import __version__
    return __version__


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Library warnings (a multi-frame GIF, fp16 on a CPU) as `warning: …` lines, no source text."""
    print(f"warning: {message}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    import warnings
    warnings.showwarning = _one_line_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    module = _command_module(args.command.replace("-", "_"))  # train-arbitrary → train_arbitrary
    try:
        return module.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    """The `styleforge` console script and `python -m styleforge`: `main`, then `leave`."""
    leave(main())


def leave(code: int | None) -> None:
    """End the process with `code` once the command's work is done, skipping interpreter teardown.

    Tearing the interpreter down (every module's globals, then torch's and the CUDA runtime's
    destructors) is a visible part of a short command and does nothing the operating system does
    not do when the process ends: outputs are already closed and renamed into place. So this takes
    the ordinary exit's first steps in its order (threading's shutdown: thread pools stopped,
    running threads waited for; then the atexit handlers: logging, temporary folders, ray),
    flushes the streams and ends with `os._exit`. Under a profiler, tracer or debugger (which
    write their results after the command returns: `python -m cProfile -m styleforge`), or where
    threading has no `_shutdown` (another Python), the ordinary exit is taken.
    """
    import atexit
    import os
    import threading
    code = 0 if code is None else code
    shutdown = getattr(threading, "_shutdown", None)
    if not isinstance(code, int) or shutdown is None or _observed():
        sys.exit(code)
    shutdown()                # what Py_Finalize calls first: joins non-daemon threads
    atexit._run_exitfuncs()   # and then this
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe (`| head`): nothing more can be said there
            pass
    _flush_c_streams()
    os._exit(code)


def _flush_c_streams() -> None:
    """C's stdio buffers (what a native library printed), which os._exit would drop unwritten."""
    try:
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):   # no C library handle here (Windows)
        pass


def _observed() -> bool:
    """Whether a profiler, tracer or debugger watches this process."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)   # Python 3.12+: cProfile and debuggers use it
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))


if __name__ == "__main__":
    entry()
