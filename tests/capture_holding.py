"""A graph capture held on another thread, for tests of CUDA work that must wait for it
(`engine.capture`: the shared side of the lock waits while the capture side is held)."""
from __future__ import annotations

import threading

from styleforge.engine.capture import CAPTURE_LOCK


def waits_for_a_capture(work, settle: float = 0.2):
    """Run work() on a thread while another thread holds the capture side of the lock; the lock is
    let go after `settle` s. → (whether work was still waiting then, its result once it ran)."""
    captured, release, out = threading.Event(), threading.Event(), []

    def capture():
        with CAPTURE_LOCK.exclusive():
            captured.set()
            release.wait(10)

    capturer = threading.Thread(target=capture)
    capturer.start()
    assert captured.wait(5)
    worker = threading.Thread(target=lambda: out.append(work()))
    worker.start()
    worker.join(settle)
    waited = worker.is_alive() and not out
    release.set()
    for t in (capturer, worker):
        t.join(10)
    assert len(out) == 1, "the work did not finish once the capture was over"
    return waited, out[0]
