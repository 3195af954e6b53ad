"""Engine messages a command's user should see while the command waits on them.

A style's first use on OpenVINO exports the network and calibrates its INT8 form: tens of seconds
on a laptop, once per style, before the first image. The engine logs it at INFO, which Python's
default logging hides, so a command forwards those loggers to its own output while it runs.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

# Loggers whose INFO lines explain a wait the user would otherwise sit through in silence.
NOTICE_LOGGERS = ("styleforge.engine.openvino_runner",)


class _Forward(logging.Handler):
    def __init__(self, say: Callable[[str], None]):
        super().__init__(logging.INFO)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        try:
            prefix = "warning: " if record.levelno >= logging.WARNING else ""
            self.say(prefix + record.getMessage())
        except Exception:  # noqa: BLE001 — logging's contract: a handler never raises
            self.handleError(record)


@contextlib.contextmanager
def engine_notices(say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, the NOTICE_LOGGERS' INFO and higher lines go to `say`, and only there
    (they do not propagate to the root logger twice); afterwards the loggers are as they were."""
    handler = _Forward(say)
    saved = []
    for name in NOTICE_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.propagate = False
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
