"""What a user sees of the libraries' logging while a command or the web app runs.

A style's first use on OpenVINO exports the network and calibrates its INT8 form: tens of seconds
on a laptop, once per style, before the first image. The engine logs it at INFO, which Python's
default logging hides, so a command (or a web request) forwards those loggers while it runs
(`engine_notices`); other libraries' notes that tell a user nothing are held back (`quieted`).
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

# Loggers whose INFO lines explain a wait the user would otherwise sit through in silence.
NOTICE_LOGGERS = ("styleforge.engine.openvino_runner",)

_lock = threading.Lock()
_active = 0                     # blocks open now: web requests overlap, so the first in saves the
_saved: list[tuple[logging.Logger, int, bool]] = []    # loggers' state and the last out restores it


class _Forward(logging.Handler):
    def __init__(self, say: Callable[[str], None], thread: int | None):
        super().__init__(logging.INFO)
        self.say = say
        self.thread = thread

    def emit(self, record: logging.LogRecord) -> None:
        if self.thread is not None and record.thread != self.thread:
            return                          # another request's engine: not this user's wait
        try:
            prefix = "warning: " if record.levelno >= logging.WARNING else ""
            self.say(prefix + record.getMessage())
        except Exception:  # noqa: BLE001 — logging's contract: a handler never raises
            self.handleError(record)


@contextlib.contextmanager
def engine_notices(say: Callable[[str], None], this_thread_only: bool = False) -> Iterator[None]:
    """Within the block, the NOTICE_LOGGERS' INFO and higher lines go to `say` (only those logged
    by the calling thread, if asked) and not on to the root logger; when the last open block ends
    the loggers are as they were. Blocks may overlap, from any threads."""
    global _active
    handler = _Forward(say, threading.get_ident() if this_thread_only else None)
    loggers = [logging.getLogger(name) for name in NOTICE_LOGGERS]
    with _lock:
        if _active == 0:
            _saved[:] = [(logger, logger.level, logger.propagate) for logger in loggers]
            for logger in loggers:
                logger.propagate = False
                if logger.getEffectiveLevel() > logging.INFO:
                    logger.setLevel(logging.INFO)
        _active += 1
        for logger in loggers:
            logger.addHandler(handler)
    try:
        yield
    finally:
        with _lock:
            for logger in loggers:
                logger.removeHandler(handler)
            _active -= 1
            if _active == 0:
                for logger, level, propagate in _saved:
                    logger.setLevel(level)
                    logger.propagate = propagate


@contextlib.contextmanager
def quieted(name: str, level: int = logging.WARNING) -> Iterator[None]:
    """Logger `name` drops records under `level` within the block (its own level restored after)."""
    logger = logging.getLogger(name)
    before = logger.level
    logger.setLevel(max(before, level))
    try:
        yield
    finally:
        logger.setLevel(before)
