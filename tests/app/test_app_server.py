"""`serve()`'s shutdown on the main thread, with the app and Gradio replaced by cheap fakes.

The signal test sends SIGTERM to a helper thread, as the kernel may when CUDA and Gradio threads
exist: the main thread must still notice it. A fallback timer ends a regression as a failure
instead of a hung run. Real processes and a browser: `test_app_browser.py`.
"""
from __future__ import annotations

import importlib.util
import signal
import threading
import time

import pytest

from styleforge.app import server
from styleforge.app.options import ServeOptions
from styleforge.cli import main

FALLBACK_S = 10   # far above the 0.5 s poll; only a main thread that never wakes reaches it


class FakeJob:
    def __init__(self):
        self.cancelled = False

    def cancel(self, wait: float) -> None:
        self.cancelled = True


class FakeHandlers:
    def __init__(self):
        from styleforge.app.inflight import InFlight
        self.job = FakeJob()
        self.inflight = InFlight(RuntimeError)


class FakeThumbnails:
    def start(self) -> None:
        pass


class FakeDemo:
    def __init__(self):
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_app(monkeypatch):
    """(demo, handlers, watchdog calls): `serve()` builds and launches nothing real."""
    demo, handlers, armed = FakeDemo(), FakeHandlers(), []
    monkeypatch.setattr(server, "build_app", lambda options, files, say: (demo, handlers, FakeThumbnails()))
    monkeypatch.setattr(server, "launch", lambda demo, options, files: "http://127.0.0.1:0/")
    # Recorded, never armed: a real watchdog would end pytest's process a minute later.
    monkeypatch.setattr(server.faulthandler, "dump_traceback_later", lambda *a, **k: armed.append(a))
    return demo, handlers, armed


def sigterm_from_a_helper_thread(url: str) -> None:
    def send():
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)   # delivered to this thread
    threading.Thread(target=send, daemon=True).start()


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_sigterm_on_another_thread_stops_serve(fake_app, tmp_path):
    assert threading.current_thread() is threading.main_thread()
    demo, handlers, armed = fake_app
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    stop, fallback_used = threading.Event(), []

    def fallback():
        fallback_used.append(True)
        stop.set()
    timer = threading.Timer(FALLBACK_S, fallback)
    timer.start()
    start = time.monotonic()
    try:
        server.serve(ServeOptions(temp_dir=str(tmp_path / "app")),
                     on_ready=sigterm_from_a_helper_thread, stop=stop)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - start
    assert not fallback_used, "the main thread never saw the SIGTERM"
    assert elapsed < 5
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert demo.closed and handlers.job.cancelled
    assert armed == []   # the exit watchdog is the CLI's choice, off by default


def test_exit_watchdog_is_armed_when_asked(fake_app, tmp_path):
    _, _, armed = fake_app
    stop = threading.Event()
    stop.set()
    server.serve(ServeOptions(temp_dir=str(tmp_path / "app")), stop=stop, exit_watchdog=True)
    assert armed == [(server.SHUTDOWN_GRACE_S,)]


def test_cli_asks_for_the_exit_watchdog(monkeypatch, tmp_path):
    if importlib.util.find_spec("gradio") is None:   # found, not imported: importing it costs seconds
        pytest.skip("the command refuses to start without gradio")
    calls = []
    monkeypatch.setattr("styleforge.app.serve", lambda options, **kwargs: calls.append(kwargs))
    assert main(["serve", "--temp-dir", str(tmp_path)]) == 0
    assert calls[0]["exit_watchdog"] is True
