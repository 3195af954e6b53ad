"""The web app under careless and hostile use, without a browser: a video whose header lies
about its length, refusals as one log line, outputs pruned by age and size, and requests that
a shutdown releases with a message instead of dropping them."""
from __future__ import annotations

import os
import threading
import time

import pytest

from styleforge.app.files import AppFiles, prune_outputs
from styleforge.app.inflight import SHUTDOWN_MESSAGE, InFlight
from styleforge.app.options import ServeOptions

# The handlers need gradio, about 4 s of CPU to import (tests/app/test_app_handlers.py): their tests
# are `slow` and import it inside, so collecting the default tier does not pay for it.
needs_gradio = pytest.mark.slow


@pytest.fixture
def gr():
    pytest.importorskip("av")
    return pytest.importorskip("gradio")


@pytest.fixture
def app(styles_env, tmp_path, gr):
    from styleforge.app.handlers import Handlers
    options = ServeOptions(device="cpu", backend="reference", precision="fp32", max_video_seconds=1.0,
                           max_pixels=64 * 64)
    return Handlers(options, AppFiles(tmp_path / "app"), "cpu")


@needs_gradio
def test_a_video_whose_header_lies_is_refused_at_the_limit(app, gr, capfd):
    from video_samples import lying_mkv
    path = app.files.upload_dir / "v" / "liar.mkv"
    path.parent.mkdir(parents=True)
    lying_mkv(path, frames=36, claimed_ms=100.0)         # 3 s at 12 fps, "0.1 s" in the header
    with pytest.raises(gr.Error, match="longer than the limit of 1 s") as info:
        app.video({"path": str(path), "orig_name": "liar.mkv"}, "alpha", None, 0, 1.0, False)
    assert info.value.print_exception is False
    assert str(app.files.root) not in str(info.value)
    refused = [line for line in capfd.readouterr().err.splitlines() if line.startswith("refused:")]
    assert len(refused) == 1 and "liar.mkv" in refused[0]
    assert not any(p.is_file() for p in (app.files.root / "outputs").rglob("*"))   # nothing half-written


@needs_gradio
def test_videos_over_the_pixel_limit_are_refused(app, gr):
    from video_samples import write_video

    from styleforge.app.handlers import Handlers
    path = app.files.upload_dir / "v" / "wide.mp4"
    path.parent.mkdir(parents=True)
    write_video(path)                                    # 32×24 = 768 pixels a frame
    small = Handlers(ServeOptions(device="cpu", max_pixels=500), app.files, "cpu")
    with pytest.raises(gr.Error, match="over the limit of 500"):
        small.video({"path": str(path), "orig_name": "wide.mp4"}, "alpha", None, 0, 1.0, False)


def test_outputs_are_pruned_by_age_then_size_never_the_young(tmp_path):
    outputs = tmp_path / "outputs"
    now = time.time()
    ages = {"old": 7200, "big_a": 1000, "big_b": 900, "young": 10}
    for name, age in ages.items():
        folder = outputs / name
        folder.mkdir(parents=True)
        (folder / "r.png").write_bytes(b"x" * (4000 if name.startswith("big") or name == "young" else 10))
        os.utime(folder, (now - age, now - age))
    removed = prune_outputs(outputs, max_age_s=3600, max_bytes=9000, min_age_s=300, now=now)
    assert sorted(p.name for p in removed) == ["big_a", "old"]   # the oldest until 8000 B fit in 9000
    assert sorted(p.name for p in outputs.iterdir()) == ["big_b", "young"]
    assert prune_outputs(outputs, max_age_s=3600, max_bytes=10, min_age_s=300, now=now)[0].name == "big_b"
    assert [p.name for p in outputs.iterdir()] == ["young"]     # over the size, but too young to go


def test_new_outputs_prune_the_old_ones(tmp_path):
    files = AppFiles(tmp_path / "app")
    stale = files.root / "outputs" / "stale"
    stale.mkdir()
    (stale / "r.png").write_bytes(b"x")
    os.utime(stale, (time.time() - 2 * 3600,) * 2)
    files.new_output("photo", ".png")
    assert not stale.exists()


def test_shutdown_releases_a_waiting_request_with_a_message():
    inflight = InFlight(RuntimeError)
    release = threading.Event()
    answers = []

    def slow():
        release.wait(10)
        return "done"

    def request():
        try:
            answers.append(inflight.run(slow))
        except RuntimeError as exc:
            answers.append(str(exc))
    client = threading.Thread(target=request)
    client.start()
    deadline = time.monotonic() + 5
    while inflight.waiting() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    inflight.shutdown()
    client.join(5)
    assert answers == [SHUTDOWN_MESSAGE] and inflight.busy()     # told at once; the work runs on
    with pytest.raises(RuntimeError, match="shutting down"):
        inflight.run(lambda: "new")                               # and nothing new starts
    release.set()
    deadline = time.monotonic() + 5
    while inflight.busy() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not inflight.busy()


def test_results_and_errors_pass_through_unchanged():
    inflight = InFlight(RuntimeError)
    assert inflight.run(lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(KeyError, match="k"):
        inflight.run(lambda: {}["k"])
