"""`styleforge serve` on a CPU answers within seconds of its start and says what it is doing,
while the style gallery (the shipped styles, drawn on the CPU: tens of seconds) fills in behind.

A real server process with a fresh `--temp-dir` (no cached thumbnails). The bar: the first HTTP
200 comes within 10 s of the start, or, on a machine so loaded that importing gradio and torch
alone takes longer, within that import time (measured here, in a fresh interpreter, before and
after the server's run: the larger) plus 3 s.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from app_serving import Server

import styleforge

# find_spec, not importorskip: importing gradio costs seconds of every collection, slow tier or not
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("gradio") is None, reason="needs gradio")]

STYLES = len(styleforge.list_styles())   # the shipped styles: the gallery's thumbnails


def _first_200(url: str, deadline: float) -> float:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return time.monotonic()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"no HTTP 200 from {url}")


def _import_seconds() -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", "import gradio, torch"], check=True)
    return time.monotonic() - start


def test_serve_answers_at_once_and_draws_the_gallery_behind(tmp_path):
    folder = tmp_path / "app"
    import_before = _import_seconds()   # the machine's load can change during the test: measure on both sides
    start = time.monotonic()
    server = Server(folder, None)
    try:
        answered = _first_200(server.url, start + 240) - start
        log = server.log.read_text()
        assert "loading the web app" in log
        assert f"drawing the style gallery in the background ({STYLES} thumbnails)" in log
        thumbs = folder / "thumbs"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and "style gallery ready" not in server.log.read_text():
            time.sleep(0.5)
        assert "style gallery ready" in server.log.read_text(), server.log.read_text()[-2000:]
        assert len(list(thumbs.glob("*.jpg"))) == STYLES
    finally:
        assert server.stop() == 0, server.log.read_text()[-2000:]
    bar = max(10.0, max(import_before, _import_seconds()) + 3.0)
    assert answered <= bar, f"first HTTP 200 after {answered:.1f} s (bar {bar:.1f} s)"
