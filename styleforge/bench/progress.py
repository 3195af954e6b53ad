"""A long benchmark's time box and its account of where it is, for runs that may be killed.

`Deadline`: work not started by then is recorded as skipped (a device call has a time limit).
`Stages`: one log line when each stage starts (seconds into the run), and while a stage lasts,
a "still in" line every `every` seconds with the calls it has finished and how long ago the last
one ended; so a log cut off by a kill says where the run was, and whether it was still moving
(slow) or not (stuck). A daemon thread writes those lines: PyTorch and OpenVINO release the GIL
inside their calls. Nothing here stops work: a call inside a runtime cannot be interrupted from
Python, so the caller's `timeout` is the hard limit (with `python -X faulthandler` and SIGABRT it
prints every thread's stack). Not timing (`harness`), not rows (`results`).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable


@dataclass
class Deadline:
    """Work not started by `at` (time.monotonic) is skipped: a device run has a time limit."""
    at: float = float("inf")

    @classmethod
    def after(cls, seconds: float | None) -> "Deadline":
        return cls(time.monotonic() + seconds if seconds else float("inf"))

    def passed(self) -> bool:
        return time.monotonic() >= self.at


class Stages:
    """Start lines and "still in" lines for a run's stages (see the module docstring).

    `start(name)` begins a stage, `tick()` counts one finished call in it, `beat()` writes the
    "still in" line when `every` seconds have passed without a line (the thread calls it; tests
    call it with their own clock). Use as a context manager, or call `close()`."""

    def __init__(self, log: Callable[[str], None], every: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, thread: bool = True, began: float | None = None):
        self.log, self.every, self.clock = log, every, clock
        self.began = clock() if began is None else began     # what the lines' seconds count from
        self.name = ""
        self.calls = 0
        self.stage_began = self.last_call = self.last_line = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        if thread and every > 0:
            self._thread = threading.Thread(target=self._watch, name="bench-stages", daemon=True)
            self._thread.start()

    def elapsed(self) -> float:
        return self.clock() - self.began

    def start(self, name: str) -> None:
        with self._lock:
            now = self.clock()
            self.name, self.calls = name, 0
            self.stage_began = self.last_call = self.last_line = now
        self.log(f"[{now - self.began:.0f} s] {name} …")

    def tick(self) -> None:
        with self._lock:
            self.calls += 1
            self.last_call = self.clock()

    def beat(self) -> None:
        with self._lock:
            now = self.clock()
            if not self.name or now - self.last_line < self.every:
                return
            self.last_line = now
            line = (f"[{now - self.began:.0f} s] still in {self.name}: {self.calls} calls done in "
                    f"{now - self.stage_began:.0f} s, the last ended {now - self.last_call:.0f} s ago")
        self.log(line)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self.name = ""

    def _watch(self) -> None:
        while not self._stop.wait(min(self.every, 5.0)):
            self.beat()

    def __enter__(self) -> "Stages":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
