"""The multi-device executor through real spawned workers, with two CPU "devices" standing in for
GPUs (the path `--gpus` takes, device aside): the same bytes as one process, each job once,
a killed worker or Ctrl-C leaving no partial file and a clear report."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from styleforge.engine.options import StylizeOptions
from styleforge.jobs import OUTPUT_MARK, plan_jobs, run_jobs
from styleforge.jobs.multi_device import WorkerFailed, run_on_devices
from styleforge.media.options import PipelineOptions

pytestmark = pytest.mark.slow      # each run starts two Python processes that import torch

OPTIONS = StylizeOptions(style="alpha", device="cpu", backend="reference")
SHALLOW = PipelineOptions(workers=1, depth=1)   # few jobs in flight: a stop leaves some unstarted
REPO = Path(__file__).resolve().parents[2]


def make_inputs(folder: Path, count: int) -> list[Path]:
    rng = np.random.default_rng(7)
    folder.mkdir()
    paths = []
    for i in range(count):   # mixed sizes and formats: batching and codecs see what a folder holds
        size = (48 + 4 * (i % 3), 40 + 2 * (i % 2), 3)
        path = folder / f"{i:03d}.{'png' if i % 4 == 0 else 'jpg'}"
        Image.fromarray(rng.integers(0, 256, size, dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def jobs_into(sources: list[Path], folder: Path) -> list:
    """The library plan's pending jobs: `sources`' folder into `folder`, names kept."""
    plan = plan_jobs([str(sources[0].parent)], str(folder) + "/", OPTIONS, keep_names=True)
    assert not plan.errors
    return plan.pending(OPTIONS.overwrite)


def written(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if not p.name.startswith(".")}


def one_process(sources: list[Path], folder: Path) -> dict[str, bytes]:
    from styleforge.api import get_stylizer
    records = list(run_jobs(jobs_into(sources, folder), get_stylizer(OPTIONS), OPTIONS))
    assert all(r.ok for r in records) and len(records) == len(sources)
    return written(folder)


def leftovers(folder: Path) -> list[str]:
    """Temp files, claims: anything hidden but the output folder's mark."""
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != OUTPUT_MARK]


def test_two_devices_write_the_bytes_of_one_each_job_once(styles_env, tmp_path):
    sources = make_inputs(tmp_path / "in", 16)
    expected = one_process(sources, tmp_path / "one")
    jobs = jobs_into(sources, tmp_path / "two")
    with run_on_devices(jobs, OPTIONS, devices=("cpu", "cpu")) as run:
        records = list(run)
    assert sorted(r.index for r in records) == list(range(len(jobs)))
    assert all(r.ok and r.output == str(jobs[r.index].target) for r in records)
    assert sum(w.records for w in run.workers) == len(jobs)
    assert written(tmp_path / "two") == expected
    assert leftovers(tmp_path / "two") == []
    # The same jobs again (a run planned before this one finished) write nothing: each is skipped.
    with run_on_devices(jobs, OPTIONS, devices=("cpu", "cpu")) as again:
        records = list(again)
    assert len(records) == len(jobs) and all(r.skipped for r in records)
    assert written(tmp_path / "two") == expected


def test_a_worker_streams_its_claims_with_the_pipeline_full(styles_env, tmp_path):
    """Claims are pulled by the pipeline's feeder whenever it has room, so one worker holds more
    than its queue's depth in flight (decode, engine and encode overlap), not one job at a time;
    and it warmed its pipeline before it said ready."""
    sources = make_inputs(tmp_path / "in", 12)
    expected = one_process(sources, tmp_path / "one")
    depth = 3
    with run_on_devices(jobs_into(sources, tmp_path / "out"), OPTIONS, PipelineOptions(workers=1, depth=depth),
                        devices=("cpu",)) as run:
        records = list(run)
    worker, = run.workers
    assert worker.records == len(records) == len(sources)
    assert worker.peak_in_flight > depth
    assert worker.warm_s > 0 and worker.engine
    assert written(tmp_path / "out") == expected


def test_a_killed_worker_stops_the_run_leaves_no_partial_file_and_a_rerun_completes(styles_env, tmp_path):
    sources = make_inputs(tmp_path / "in", 40)
    expected = one_process(sources, tmp_path / "one")
    out = tmp_path / "two"
    jobs = jobs_into(sources, out)
    received = []
    with pytest.raises(WorkerFailed, match=r"killed by SIGKILL.*other workers stopped.*re-run") as failed:
        with run_on_devices(jobs, OPTIONS, SHALLOW, ("cpu", "cpu"), drain_s=60) as run:
            for record in run:
                received.append(record)
                busy = [w for w in run.workers if w.records and w.process.is_alive()]
                if len(received) == 2 and busy:
                    os.kill(busy[0].process.pid, signal.SIGKILL)   # mid-run: it holds claimed jobs
    assert "pid" in str(failed.value)
    assert all(not w.process.is_alive() for w in run.workers)
    assert leftovers(out) == []                                   # nor its claims
    done = written(out)
    assert 0 < len(done) < len(jobs)
    assert all(expected[name] == data for name, data in done.items())   # each one whole
    rest = jobs_into(sources, out)                  # a re-run plans only what is missing
    assert len(rest) == len(jobs) - len(done)
    with run_on_devices(rest, OPTIONS, devices=("cpu", "cpu")) as rerun:
        records = list(rerun)
    assert all(r.ok and not r.skipped for r in records) and len(records) == len(rest)
    assert written(out) == expected


def test_a_worker_that_cannot_load_its_engine_is_one_clear_error(styles_env, tmp_path):
    sources = make_inputs(tmp_path / "in", 2)
    bad = StylizeOptions(style="no-such-style", device="cpu", backend="reference")
    with pytest.raises(WorkerFailed, match="no-such-style"):
        with run_on_devices(jobs_into(sources, tmp_path / "out"), bad, devices=("cpu", "cpu")) as run:
            list(run)
    assert not (tmp_path / "out").exists() or written(tmp_path / "out") == {}


def test_ctrl_c_in_the_cli_finishes_what_is_in_flight_and_exits_130(styles_env, tmp_path):
    sources = make_inputs(tmp_path / "in", 60)
    expected = one_process(sources, tmp_path / "one")
    out = tmp_path / "two"
    command = [sys.executable, "-m", "styleforge", "stylize", str(tmp_path / "in"), "-o", str(out),
               "--keep-names", "--style", "alpha", "--backend", "reference", "--devices", "cpu,cpu",
               "--workers", "1", "--queue-depth", "1"]
    from sigint_default import sigint_default
    child = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if out.exists() and any(p.suffix in (".jpg", ".png") for p in out.iterdir()):
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert "interrupted" in err and "not started" in err and "Traceback" not in err
    assert leftovers(out) == []
    done = written(out)
    assert 0 < len(done) < len(sources)
    assert all(expected[name] == data for name, data in done.items())
