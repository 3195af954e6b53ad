"""The kernel cache's build lock: one builder per cache entry, a bounded wait, no stale locks.

`torch.utils.cpp_extension.load` guards its build folder with a `lock` file that it waits on
forever; a build killed by `kill -9` or the OOM killer leaves that file behind and every later
build (or first CUDA use) would hang without a word. StyleForge therefore takes its own lock
first: `<build folder>.lock` beside the folder, held with `flock`, which the kernel releases
when the holder dies, so a dead holder never blocks anyone. The file records the holder's PID
and start time for the messages. While we hold it no other StyleForge process builds that
folder, so a torch `lock` file found inside is stale and is removed. Waiting is announced once
and ends with `BuildLockTimeout` naming the holder's PID and the lock file. Where `flock` does
not exist (Windows) the lock falls back to a PID file whose holder is presumed dead once its
PID is gone or it is older than `STALE_AFTER_S`. This module compiles nothing.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Callable, Iterator

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

DEFAULT_TIMEOUT_S = 900.0   # a cold build takes about a minute; 15 minutes means something is stuck
STALE_AFTER_S = 2 * 3600.0  # a PID-file lock older than this is stale even if its PID was reused
POLL_S = 0.2
TORCH_BATON = "lock"        # the file cpp_extension.load's FileBaton creates in the build folder


class BuildLockTimeout(RuntimeError):
    """Another process held the build lock for longer than the timeout."""


def lock_path(directory: Path) -> Path:
    return directory.with_name(f"{directory.name}.lock")


def _holder(path: Path) -> tuple[int | None, float | None]:
    """(pid, start time) written by the holder, or Nones when unreadable."""
    try:
        pid, started = path.read_text().split()[:2]
        return int(pid), float(started)
    except (OSError, ValueError):
        return None, None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # alive, owned by someone else
        return True
    except OSError:
        return False
    return True


def _describe(path: Path) -> str:
    pid, started = _holder(path)
    if pid is None:
        return f"another process holds {path}"
    age = f", for {time.time() - started:.0f} s" if started else ""
    return f"process {pid} holds {path}{age}"


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _try_pid_file(path: Path) -> int | None:
    """Create the PID file exclusively (removing a stale one first); its fd, or None if held."""
    pid, started = _holder(path)
    if path.exists() and (pid is None or not _pid_alive(pid)
                          or (started is not None and time.time() - started > STALE_AFTER_S)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return None


@contextlib.contextmanager
def build_lock(directory: Path, timeout: float = DEFAULT_TIMEOUT_S,
               on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold the build lock of `directory` (created if needed) for the body; yields the lock path.

    on_wait(message) is called once if another process holds the lock; BuildLockTimeout after
    `timeout` seconds. A stale torch `lock` file inside `directory` is removed once we hold it.
    """
    path = lock_path(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    announced = False
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644) if fcntl else None
    try:
        while True:
            if fcntl:
                if _try_flock(fd):
                    break
            else:
                fd = _try_pid_file(path)
                if fd is not None:
                    break
            if time.monotonic() >= deadline:
                raise BuildLockTimeout(
                    f"gave up after {timeout:.0f} s waiting for the kernel build lock: {_describe(path)}. "
                    "If that build is stuck, stop it and run `styleforge build` again")
            if not announced and on_wait is not None:
                on_wait(f"waiting for another StyleForge kernel build to finish ({_describe(path)})")
                announced = True
            time.sleep(POLL_S)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()} {time.time():.0f}\n".encode())
        baton = directory / TORCH_BATON
        if baton.exists():    # left by a killed build: cpp_extension.load would wait on it forever
            baton.unlink(missing_ok=True)
        yield path
    finally:
        if fd is not None:
            if fcntl:
                os.ftruncate(fd, 0)   # the next holder writes its own PID; the file itself stays
            os.close(fd)              # closing releases the flock
            if not fcntl:
                path.unlink(missing_ok=True)
