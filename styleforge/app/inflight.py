"""Requests in flight, so that a shutdown tells every waiting client instead of dropping it.

The engine cannot be interrupted mid-call, so each engine request (`InFlight.run`) does its work
on a helper thread while the Gradio worker waits for either the result or the shutdown. On
`shutdown()` every waiting request raises one `gr.Error` ("the server is shutting down") that
Gradio sends to its client, and new requests are refused the same way; `drain()` then waits
until Gradio has no event left to answer. Work still running after that is abandoned: the
process must then end without running library destructors (`busy()` tells the server so), since
a thread inside PyTorch at interpreter exit ends in `std::terminate` (SIGABRT, status 134).
Not here: the signal handling and the order of shutdown (`server.py`).
"""
from __future__ import annotations

import contextvars
import functools
import threading
import time
from typing import Any, Callable

SHUTDOWN_MESSAGE = "the server is shutting down; send the request again once it is back"
DRAIN_S = 10.0         # how long shutdown waits for Gradio to deliver the last answers
_POLL_S = 0.05


class InFlight:
    def __init__(self, refuse: Callable[[str], BaseException]):
        self._refuse = refuse              # message → the exception the client is shown
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._waiting = 0                  # Gradio workers inside run()
        self._workers: set[threading.Thread] = set()

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs) on a helper thread; its result or exception, or the shutdown
        refusal if the server stops first."""
        if self._stopping.is_set():
            raise self._refuse(SHUTDOWN_MESSAGE)
        outcome: dict[str, Any] = {}
        done = threading.Event()
        context = contextvars.copy_context()     # Gradio's progress tracking lives in context vars

        def work() -> None:
            try:
                outcome["value"] = context.run(fn, *args, **kwargs)
            except BaseException as exc:         # handed to the waiting request as it is
                outcome["error"] = exc
            finally:
                done.set()
                with self._lock:
                    self._workers.discard(threading.current_thread())

        worker = threading.Thread(target=work, name="sf-request", daemon=True)
        with self._lock:
            self._waiting += 1
            self._workers.add(worker)
        try:
            worker.start()
            while not done.wait(_POLL_S):
                if self._stopping.is_set():
                    raise self._refuse(SHUTDOWN_MESSAGE)
        finally:
            with self._lock:
                self._waiting -= 1
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` run through `run`, with its signature kept (Gradio reads it for gr.Progress)."""
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return self.run(fn, *args, **kwargs)
        return wrapped

    def shutdown(self) -> None:
        """Refuse new requests and release every waiting one with the shutdown message."""
        self._stopping.set()

    def waiting(self) -> int:
        with self._lock:
            return self._waiting

    def busy(self) -> bool:
        """Whether abandoned work is still running inside the library."""
        with self._lock:
            return any(worker.is_alive() for worker in self._workers)


def drain(inflight: InFlight, demo: Any, timeout: float = DRAIN_S) -> None:
    """Wait until no request waits in `inflight` and Gradio has no event running or queued, so
    that the answers sent at shutdown reach their clients before the server closes."""
    deadline = time.monotonic() + timeout
    queue = getattr(demo, "_queue", None)
    while time.monotonic() < deadline:
        active = [job for job in getattr(queue, "active_jobs", []) if job is not None]
        pending = getattr(queue, "pending_messages_per_session", {})
        unsent = any(not messages.empty() for messages in list(pending.values())
                     if hasattr(messages, "empty"))
        queued = len(queue) if queue is not None else 0
        if inflight.waiting() == 0 and not active and not queued and not unsent:
            break
        time.sleep(_POLL_S)
    time.sleep(0.2)    # the event stream writes the last message after taking it off the queue
