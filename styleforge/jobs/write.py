"""Exactly-once outputs: a claim per target, then the atomic temp-file-and-rename write.

Two runs over the same files (two shells, two GPUs of `--gpus`, two Ray workers after a retry)
must neither both spend the work nor both write. Before a job starts, its writer takes the
target's claim: a small file `.<name, 40 chars>.<hash>.claim` beside the target, published with
`os.link` (atomic, fails when the name exists), holding `pid host start-time`. Whoever holds the
claim stylizes and writes; everyone else skips the job as taken. The write itself is
`io.atomic.atomic_write` (temp file in the target folder, fsync, rename), with `replace=False`
unless overwriting, so even a writer that lost its claim cannot clobber a finished output.

A claim is stale, and is taken over, when its writer is gone: on this host, its process is dead
(or the pid was reused by a process that started later); on another host (a shared folder) it is
older than `REMOTE_CLAIM_S`, as a remote pid cannot be checked. A writer killed mid-job (SIGKILL,
OOM, a Ray worker dying) therefore leaves at most a stale claim and a stale temp file; the next
run's first write into that folder removes both (`sweep`).

A job is done when its target exists: targets only ever appear whole (rename), so existence
is completion. Not here: what the targets are (`jobs.plan`), how images are encoded (`io.image`).
"""
from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Callable

from ..io.atomic import HOST_TAG, _process_alive, atomic_write, sweep_stale_temps

REMOTE_CLAIM_S = 30 * 60.0      # another host's claim counts as abandoned after this long
CLAIM_SUFFIX = ".claim"
_swept: set[Path] = set()
_swept_lock = threading.Lock()


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), '0' where unknown; with the
    pid it names one process, so a reused pid does not keep a dead writer's claim alive."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "0"


_OWNER = f"{os.getpid()} {HOST_TAG} {_start_time(os.getpid())}"


def claim_path(target: str | os.PathLike) -> Path:
    """Where the claim on `target` lives: beside it, hidden, a fixed name per target."""
    target = Path(target)
    digest = hashlib.sha1(target.name.encode(errors="surrogateescape")).hexdigest()[:12]
    return target.with_name(f".{target.name[:40]}.{digest}{CLAIM_SUFFIX}")


def _stale(path: Path, now: float) -> bool:
    try:
        owner = path.read_text().split()
        age = now - path.stat().st_mtime
    except (OSError, UnicodeDecodeError):
        return False                      # gone meanwhile (then the next attempt succeeds)
    if len(owner) != 3:
        return age > REMOTE_CLAIM_S       # not ours to judge early; never written torn (link)
    pid, host, started = owner
    if host != HOST_TAG:
        return age > REMOTE_CLAIM_S
    if not pid.isdigit() or not _process_alive(int(pid)):
        return True
    return started != "0" and _start_time(int(pid)) not in ("0", started)


class Claim:
    """The right to write one target; release it when the write is over (or use `with`)."""

    def __init__(self, target: Path, path: Path):
        self.target, self.path = target, path

    def release(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def claim(target: str | os.PathLike) -> Claim | None:
    """Take the claim on `target`; None when a live writer holds it. A stale claim is taken over.
    Raises OSError when the folder cannot be written (created here if needed)."""
    target = Path(target)
    path = claim_path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target.parent)
    for _ in range(3):
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(_OWNER)
        try:
            os.link(tmp, path)
            return Claim(target, path)
        except FileExistsError:
            if not _stale(path, time.time()):
                return None
            try:
                os.unlink(path)           # two takers of one stale claim: link decides again
            except FileNotFoundError:
                pass
        except OSError as exc:            # no hard links here: O_EXCL create is as exclusive
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not _stale(path, time.time()):
                    return None
                os.unlink(path)
                continue
            with os.fdopen(fd, "w") as handle:
                handle.write(_OWNER)
            return Claim(target, path)
        finally:
            tmp.unlink(missing_ok=True)
    return None


def sweep(folder: str | os.PathLike) -> None:
    """Once per process and folder: remove the stale claims and temp files of killed writers."""
    key = Path(folder).resolve()
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    sweep_stale_temps(key)
    now = time.time()
    try:
        entries = [Path(e.path) for e in os.scandir(key) if e.name.endswith(CLAIM_SUFFIX)]
    except OSError:
        return
    for path in entries:
        if path.name.startswith(".") and _stale(path, now):
            path.unlink(missing_ok=True)


def is_done(target: str | os.PathLike) -> bool:
    """Whether `target` holds a finished output (outputs appear only whole, by rename)."""
    return os.path.lexists(target)


def write_once(target: str | os.PathLike, write: Callable[[str], None],
               overwrite: bool = False) -> Path | None:
    """Write `target` once: `write(temp_name)` fills a temp file in the target's folder, which is
    then renamed onto `target`. Returns the path, or None when nothing was written because the
    target is done (and not `overwrite`) or another live writer holds its claim.
    Raises OSError (naming `target`) when it cannot be written; no temp file is left behind."""
    target = Path(target)
    if not overwrite and is_done(target):
        return None
    held = claim(target)
    if held is None:
        return None
    with held:
        if not overwrite and is_done(target):   # finished by another run before we claimed it
            return None
        try:
            return atomic_write(target, write, replace=overwrite)
        except FileExistsError:
            return None
