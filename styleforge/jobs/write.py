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
import glob
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Callable

from ..io.atomic import HOST_TAG, _process_alive, atomic_write, sweep_once

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


def _judge(path: Path, now: float) -> tuple[str, str]:
    """('gone' | 'live' | 'stale', the claim's text) for the claim file at `path`."""
    try:
        text = path.read_text()
        age = now - path.stat().st_mtime
    except FileNotFoundError:
        return "gone", ""
    except (OSError, UnicodeDecodeError):
        return "live", ""                 # unreadable: not ours to judge
    owner = text.split()
    if len(owner) != 3 or owner[1] != HOST_TAG:
        # another host's (or a claim still being written without hard links): by age only
        return ("stale" if age > REMOTE_CLAIM_S else "live"), text
    pid, _, started = owner
    if not pid.isdigit() or not _process_alive(int(pid)):
        return "stale", text
    reused = started != "0" and _start_time(int(pid)) not in ("0", started)
    return ("stale" if reused else "live"), text


class Claim:
    """The right to write one target; release it when the write is over (or use `with`)."""

    def __init__(self, target: Path, path: Path):
        self.target, self.path = target, path

    def release(self) -> None:
        try:
            if self.path.read_text() == _OWNER:   # not a claim taken over from us (age, remote)
                os.unlink(self.path)
        except (FileNotFoundError, UnicodeDecodeError):
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
    for _ in range(4):
        if _create(path):
            return Claim(target, path)
        state, text = _judge(path, time.time())
        if state == "live":
            return None
        if state == "stale":
            _take_over(path, target, text)
    return None               # contended this long: someone else has it by now


def _create(path: Path) -> bool:
    """Publish this process's claim at `path` whole (a link fails when the name exists); False
    when a claim is there. Without hard links, an exclusive create (its text lands just after)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.write_text(_OWNER)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as handle:
            handle.write(_OWNER)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _take_over(path: Path, target: Path, seen: str) -> None:
    """Remove the dead writer's claim `seen` on `target`, and the temp files it left for it: their
    writer is known dead, so they go now, not after `io.atomic`'s grace period. The claim is moved
    aside first and checked: if another taker replaced it meanwhile, theirs is put back."""
    aside = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.old")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    try:
        moved = aside.read_text()
    except (OSError, UnicodeDecodeError):
        moved = None
    if moved != seen:
        try:
            os.link(aside, path)
        except OSError:
            pass              # a third writer claimed it meanwhile; the no-clobber rename still holds
        aside.unlink(missing_ok=True)
        return
    aside.unlink(missing_ok=True)
    pid = seen.split()[0] if seen.split() else ""
    if pid.isdigit():
        for leftover in target.parent.glob(f".{glob.escape(target.name[:40])}.{pid}-{HOST_TAG}.*.tmp"):
            leftover.unlink(missing_ok=True)


def sweep(folder: str | os.PathLike) -> None:
    """Once per process and folder: remove the stale claims and temp files of killed writers
    (the temp files through `io.atomic`'s own once-per-folder sweep, which its writes then skip)."""
    key = Path(folder).resolve()
    sweep_once(key)
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    now = time.time()
    try:
        entries = [Path(e.path) for e in os.scandir(key) if e.name.endswith(CLAIM_SUFFIX)]
    except OSError:
        return
    for path in entries:
        state, text = _judge(path, now)
        if path.name.startswith(".") and state == "stale":
            _take_over(path, path.with_name(path.name[1:].rsplit(".", 2)[0]), text)


def clear_if_stale(target: str | os.PathLike) -> None:
    """Remove `target`'s claim and its writer's temp files now if that writer is gone (what `claim`
    does on meeting them), for a caller that knows its writers just ended."""
    target = Path(target)
    path = claim_path(target)
    state, text = _judge(path, time.time())
    if state == "stale":
        _take_over(path, target, text)


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
