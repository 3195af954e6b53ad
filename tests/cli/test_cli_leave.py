"""`cli.leave`: the command ends without the interpreter's teardown, but only after what the
ordinary exit does first: running threads finish, atexit handlers run, buffered output is written."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Buffered streams, as a user's shell gives them (PYTHONUNBUFFERED would make the flushes moot).
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}

_CHILD = """
import atexit, sys, threading, time
from pathlib import Path
from styleforge.cli import leave
folder = Path(sys.argv[1])
atexit.register(lambda: (folder / "atexit").write_text("ran"))
def late():
    time.sleep(0.3)
    (folder / "thread").write_text("finished")
threading.Thread(target=late).start()
sys.stdout.write("buffered, no newline")
leave(3)
print("never")
"""


def test_leave_waits_for_threads_runs_atexit_flushes_and_keeps_the_code(tmp_path):
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env=BUFFERED)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, no newline"
    assert (tmp_path / "thread").read_text() == "finished"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_python_m_styleforge_exits_with_the_commands_code():
    done = subprocess.run([sys.executable, "-m", "styleforge"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env=BUFFERED)
    assert done.returncode == 2 and done.stdout.startswith("usage: styleforge")   # main's help, unbuffered


def test_under_a_profiler_the_ordinary_exit_lets_it_write_its_results(tmp_path):
    profile = tmp_path / "run.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "styleforge"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("usage: styleforge"), done.stderr
    assert profile.stat().st_size > 0


def test_what_a_native_library_printed_is_written_too():
    child = ("import ctypes; from styleforge.cli import leave; "
             "ctypes.CDLL(None).printf(b'from C, buffered in a pipe'); leave(0)")
    done = subprocess.run([sys.executable, "-c", child], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env=BUFFERED)
    assert done.returncode == 0 and done.stdout == "from C, buffered in a pipe"
