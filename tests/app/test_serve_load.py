"""The load test at the issue's size: 20 clients × 5 requests → 100 results, 0 lost, 0 errors,
the server's memory flat. A real `styleforge serve` subprocess on localhost, tiny styles, CPU."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from app_serving import Server
from PIL import Image

# find_spec, not importorskip: importing gradio_client costs seconds of every collection, slow tier or not
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("gradio_client") is None, reason="needs gradio_client")]


def test_twenty_clients_five_requests_each(tiny_styles, tmp_path):
    from styleforge.bench.serve_load import run_load
    photo = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)).save(photo)
    server = Server(tmp_path / "app", tiny_styles)
    try:
        result = run_load(server.url, photo, clients=20, requests=5, style="alpha", server_pid=server.pid())
    finally:
        assert server.stop() == 0
    assert result.errors == []
    assert result.results == 100 and result.lost == 0
    assert result.rss_after_mb - result.rss_warm_mb < 50, result.summary()


def test_load_test_refuses_other_hosts():
    from styleforge.bench.serve_load import run_load
    with pytest.raises(ValueError, match="only targets this machine"):
        run_load("http://example.com:7860/", "x.png")
