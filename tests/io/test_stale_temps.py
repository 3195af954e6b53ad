"""Temp files of killed writers: a later run's first write into the folder removes them, and
only them (live writers', young ones, other hosts' and unrelated files stay)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from styleforge.io import atomic

ROOT = Path(__file__).resolve().parents[2]
WRITER = """
import sys, time
from styleforge.io.atomic import atomic_write
def slow(tmp):
    open(tmp, "wb").write(b"x" * 1000)
    print("writing", flush=True)
    time.sleep(60)
atomic_write(sys.argv[1], slow)
"""


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path, monkeypatch):
    target = tmp_path / "weights.pth"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE,
                              text=True, env=env)
    assert writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    (left,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert f".{writer.pid}-{atomic.HOST_TAG}." in left.name
    monkeypatch.setattr(atomic, "_swept", set())        # a fresh process: nothing swept yet
    atomic.atomic_write(tmp_path / "other.bin", lambda tmp: Path(tmp).write_bytes(b"new"))
    assert left.exists()                                 # younger than STALE_AFTER_S: left alone
    age(left, atomic.STALE_AFTER_S + 5)
    monkeypatch.setattr(atomic, "_swept", set())
    atomic.atomic_write(tmp_path / "other.bin", lambda tmp: Path(tmp).write_bytes(b"new"))
    assert not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.bin"]


def test_only_dead_writers_temps_on_this_host_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    names = {
        "dead": f".photo.png.{dead.pid}-{atomic.HOST_TAG}.abcd_123.tmp",
        "live": f".photo.png.{os.getppid()}-{atomic.HOST_TAG}.abcd_124.tmp",
        "other_host": f".photo.png.{dead.pid}-ffffff.abcd_125.tmp" if atomic.HOST_TAG != "ffffff"
        else f".photo.png.{dead.pid}-000000.abcd_125.tmp",
        "not_ours": f".photo.png.{dead.pid}.tmp",
        "plain": "photo.png",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
        age(tmp_path / name, 3600)
    removed = atomic.sweep_stale_temps(tmp_path)
    assert [p.name for p in removed] == [names["dead"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(v for k, v in names.items() if k != "dead")
