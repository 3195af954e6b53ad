"""The kernel build lock: a killed holder never blocks, a live one is waited for with a message
and a bounded timeout, a stale torch baton is removed, and `--force` runs under the lock."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from styleforge.kernels import build, build_lock
from styleforge.kernels.build_lock import BuildLockTimeout

# The child loads the module by path: importing the package would import torch (seconds).
HOLD = textwrap.dedent("""
    import importlib.util, sys, time
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("build_lock", sys.argv[2])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with module.build_lock(Path(sys.argv[1])):
        print("held", flush=True)
        time.sleep(60)
""")


def hold_in_child(directory):
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(directory), build_lock.__file__],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_a_live_holder_is_waited_for_with_a_message_then_a_timeout(tmp_path):
    directory = tmp_path / "sm90-key"
    child = hold_in_child(directory)
    try:
        said = []
        start = time.monotonic()
        with pytest.raises(BuildLockTimeout, match=rf"process {child.pid} holds .*sm90-key.lock"):
            with build_lock.build_lock(directory, timeout=0.6, on_wait=said.append):
                pass
        assert 0.5 < time.monotonic() - start < 5
        assert len(said) == 1 and "waiting for another StyleForge kernel build" in said[0]
    finally:
        child.kill()
        child.wait()


def test_a_killed_holder_and_its_torch_baton_do_not_block(tmp_path):
    directory = tmp_path / "sm90-key"
    child = hold_in_child(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / build_lock.TORCH_BATON).write_text("")   # what cpp_extension leaves when killed
    child.send_signal(signal.SIGKILL)
    child.wait()
    start = time.monotonic()
    with build_lock.build_lock(directory, timeout=5) as path:
        assert path.read_text().split()[0] == str(os.getpid())
        assert not (directory / build_lock.TORCH_BATON).exists()
    assert time.monotonic() - start < 1


def test_pid_file_fallback_treats_dead_or_old_holders_as_stale(tmp_path, monkeypatch):
    monkeypatch.setattr(build_lock, "fcntl", None)
    directory = tmp_path / "entry"
    lock = build_lock.lock_path(directory)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(f"{dead.pid} {time.time():.0f}\n")
    with build_lock.build_lock(directory, timeout=2):
        assert lock.read_text().split()[0] == str(os.getpid())
    assert not lock.exists()
    lock.write_text(f"{os.getppid()} {time.time() - build_lock.STALE_AFTER_S - 1:.0f}\n")
    with build_lock.build_lock(directory, timeout=2):
        pass
    lock.write_text(f"{os.getppid()} {time.time():.0f}\n")     # alive and recent: held
    with pytest.raises(BuildLockTimeout):
        with build_lock.build_lock(directory, timeout=0.3):
            pass


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_force_deletes_the_cache_only_under_the_lock(tmp_path, monkeypatch):
    """The real `build_and_load(force=True)` with only the compiler replaced: the stale cache is
    gone by the time the compiler runs, under our lock; while another process holds the lock the
    call times out and the cache is untouched."""
    from torch.utils import cpp_extension
    directory = tmp_path / "sm90-key"
    directory.mkdir()
    (directory / "old.o").write_text("stale object")
    monkeypatch.setattr(build, "build_directory", lambda capability: directory)
    seen = []

    def fake_compiler(build_directory, **_):
        folder = type(directory)(build_directory)
        seen.append((build_lock.lock_path(folder).read_text().split()[0], sorted(p.name for p in folder.iterdir())))
        build.library_path((9, 0)).write_bytes(b"built")
    monkeypatch.setattr(cpp_extension, "load", fake_compiler)
    assert build.build_and_load((9, 0), force=True) == build.library_path((9, 0))
    assert seen == [(str(os.getpid()), [])]          # deleted before the compiler ran, under our lock
    assert sorted(p.name for p in directory.iterdir()) == [build.library_path((9, 0)).name]
    (directory / "old.o").write_text("stale object")
    child = hold_in_child(directory)
    try:
        with pytest.raises(BuildLockTimeout):
            build.build_and_load((9, 0), force=True, lock_timeout=0.3)
        assert (directory / "old.o").exists() and len(seen) == 1
    finally:
        child.kill()
        child.wait()
