"""Exactly-once writes (`jobs.write`): one claim per target, a killed writer's leftovers removed
by the next run, and two runs over the same plan writing each output once."""
import os
import signal
import subprocess
import sys
import threading

import numpy as np
from PIL import Image

from styleforge.engine.options import StylizeOptions
from styleforge.jobs import claim, is_done, plan_jobs, run_jobs, write_once
from styleforge.jobs.write import claim_path

# A writer that claims its target, starts the temp file, and is SIGKILLed before the rename.
KILLED_WRITER = """
import os, signal, sys
from styleforge.io.atomic import temp_path_for
from styleforge.jobs import claim
from pathlib import Path
target = Path(sys.argv[1])
assert claim(target) is not None
fd, tmp = temp_path_for(target)
os.write(fd, b"half an image")
os.kill(os.getpid(), signal.SIGKILL)
"""


def hidden(folder):
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


def test_a_killed_writers_claim_and_temp_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "out" / "a_candy.png"
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], timeout=60)
    assert done.returncode == -signal.SIGKILL
    left = hidden(target.parent)
    assert claim_path(target).name in left and any(name.endswith(".tmp") for name in left)
    assert not is_done(target)
    assert write_once(target, lambda tmp: open(tmp, "wb").write(b"whole")) == target
    assert target.read_bytes() == b"whole" and hidden(target.parent) == []


def test_a_live_claim_keeps_other_writers_out(tmp_path):
    target = tmp_path / "a.png"
    held = claim(target)
    assert held is not None and claim(target) is None
    assert write_once(target, lambda tmp: open(tmp, "wb").write(b"second")) is None
    assert not target.exists()
    held.release()
    assert write_once(target, lambda tmp: open(tmp, "wb").write(b"first")) == target
    assert write_once(target, lambda tmp: open(tmp, "wb").write(b"again")) is None   # done
    assert write_once(target, lambda tmp: open(tmp, "wb").write(b"new"), overwrite=True) == target
    assert target.read_bytes() == b"new" and hidden(tmp_path) == []


def test_racing_writers_write_once(tmp_path):
    """Eight threads released together on one target: one write, seven skips."""
    target = tmp_path / "a.png"
    gate, calls, results = threading.Barrier(8), [], []

    def writer(i):
        gate.wait()
        results.append(write_once(target, lambda tmp: (calls.append(i), open(tmp, "wb").write(bytes([i])))))
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and results.count(target) == 1 and results.count(None) == 7
    assert target.read_bytes() == bytes(calls) and hidden(tmp_path) == []


def test_two_runs_of_one_plan_write_each_output_once(styles_env, tmp_path):
    """Both runs planned before either wrote (so each thinks every job is pending), then run at
    once: every output is written by exactly one of them and skipped by the other."""
    from styleforge.api import get_stylizer
    for i in range(6):
        pixels = np.random.default_rng(i).integers(0, 256, (12, 16, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(tmp_path / f"p{i}.png")
    options = StylizeOptions(device="cpu", precision="fp32")
    plans = [plan_jobs([tmp_path], tmp_path / "out", options) for _ in range(2)]
    assert all(len(plan.pending()) == 6 for plan in plans)
    stylizer = get_stylizer(options)
    gate, records = threading.Barrier(2), [[], []]

    def run(k):
        gate.wait()
        records[k] += run_jobs(plans[k].pending(), stylizer, options)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written = [r.output for run in records for r in run if r.ok and not r.skipped]
    skipped = [r.output for run in records for r in run if r.skipped]
    assert all(r.ok for run in records for r in run)
    assert sorted(written) == sorted(str(job.target) for job in plans[0].jobs)   # each once
    assert sorted(skipped) == sorted(written)                                    # and once skipped
    assert sorted(os.listdir(tmp_path / "out")) == sorted(
        [".styleforge-output"] + [f"p{i}_alpha.png" for i in range(6)])
