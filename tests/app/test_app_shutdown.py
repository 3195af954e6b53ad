"""SIGTERM while requests run: a real `styleforge serve` process, two slow CPU requests in
flight. The server must exit 0 (it once aborted: "terminate called without an active
exception", status 134) and each client must get the shutdown message, not a dropped stream."""
from __future__ import annotations

import importlib.util
import threading
import time

import numpy as np
import pytest
from app_serving import Server
from PIL import Image

# find_spec, not importorskip: importing gradio_client costs seconds of every collection, slow tier or not
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("gradio_client") is None, reason="needs gradio_client")]

SIDE = (4000, 3000)       # ~10+ s a request on a CPU with the tiny styles: still running at SIGTERM


def test_sigterm_under_load_exits_0_and_tells_each_client(tiny_styles, tmp_path):
    from gradio_client import Client, handle_file
    from gradio_client.utils import Status
    y, x = np.mgrid[0:SIDE[1], 0:SIDE[0]]
    pixels = np.stack([x % 256, y % 256, (x + y) % 256], -1).astype(np.uint8)
    photo = tmp_path / "big.jpg"
    Image.fromarray(pixels).save(photo, quality=80)
    server = Server(tmp_path / "app", tiny_styles, "--max-pixels", str(SIDE[0] * SIDE[1]),
                    "--concurrency", "2")
    try:
        jobs = [Client(server.url, verbose=False).submit(
                    handle_file(str(photo)), "alpha", None, 0.0, 1.0, False, "Whole image", None,
                    api_name="/stylize") for _ in range(2)]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(
                job.status().code == Status.PROCESSING for job in jobs):
            time.sleep(0.2)
        assert all(job.status().code == Status.PROCESSING for job in jobs), "requests never started"
        time.sleep(1.0)                      # inside the engine now
        started = time.monotonic()
        code = server.stop(timeout=60)
        stop_s = time.monotonic() - started
    finally:
        server.stop()
    log = server.log.read_text()
    assert code == 0, log[-2000:]
    assert "terminate called" not in log and "Traceback" not in log, log[-2000:]
    assert stop_s < 20
    answers = []

    def collect(job):
        try:
            answers.append(("result", job.result(timeout=30)))
        except Exception as exc:            # gradio_client raises the server's gr.Error as AppError
            answers.append(("error", str(exc)))
    threads = [threading.Thread(target=collect, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(40)
    assert len(answers) == 2
    assert all(kind == "error" and "shutting down" in text for kind, text in answers), answers
