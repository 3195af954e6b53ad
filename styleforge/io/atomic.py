"""Durable, atomic file writes: a temp file beside the target, fsync, rename, fsync the folder.

Every output StyleForge writes (images, weights, training checkpoints) goes through `atomic_write`,
so a crash, a kill or a power cut leaves either the old file or the whole new one under the final
name, never a partial one. The temp name is short and unique (`.<first 40 chars>.<random>.tmp`),
so two writers never collide and a 250-character file name still fits the 255-byte limit.
The temp name carries its writer's process id and host (`.<name>.<pid>-<host>.<random>.tmp`):
a writer killed mid-write (SIGKILL, power cut) leaves its temp file behind, and the first write
of a later run into that folder removes the ones whose writer is gone (`sweep_stale_temps`).
With `replace=False` the rename does not clobber: a target that appeared since the plan was
made (a second run writing the same outputs) is a `FileExistsError` and keeps its content.
Errors come out as `OSError`s whose message names the final path, never the temp file, and
`unwritable_reason` finds the usual ones (a folder that is a file, no permission) before any
work is spent. This module knows nothing about formats; callers pass a function that writes.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable


def _creation_mode() -> int:
    # mkstemp makes 0600 files; outputs should get the permissions a plain open() would give.
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


FILE_MODE = _creation_mode()


def fsync_directory(folder: Path) -> None:
    """Make a rename inside `folder` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems (and Windows) refuse fsync on a directory; the rename still stands
    finally:
        os.close(fd)


def unwritable_reason(target: str | os.PathLike) -> str | None:
    """Why `target` could not be written, judged from the disk now; None when it can be."""
    target = Path(target)
    if target.is_dir():
        return f"{target} is a folder"
    folder = target.parent
    while not folder.exists():
        if folder.is_symlink() or folder == folder.parent:   # a dangling link, or no root at all
            return f"{folder} cannot be created"
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None


HOST_TAG = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:6]
# mkstemp's random part is 8 characters of [a-z0-9_]; the first group is up to 40 of the name.
_TEMP_NAME = re.compile(r"^\..{1,40}\.(?P<pid>\d+)-(?P<host>[0-9a-f]{6})\.[a-z0-9_]{8}\.tmp$")
STALE_AFTER_S = 60.0     # younger temp files are left alone even when their pid looks free
_swept: set[Path] = set()
_swept_lock = threading.Lock()


def temp_path_for(path: Path) -> tuple[int, str]:
    """(open fd, name) of a new unique temp file in the target's folder."""
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.{os.getpid()}-{HOST_TAG}.",
                            suffix=".tmp")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # EPERM: it exists, owned by someone else
        return True
    return True


def sweep_stale_temps(folder: str | os.PathLike, now: float | None = None) -> list[Path]:
    """Remove this module's temp files in `folder` whose writer is dead: written on this host by
    a process that no longer exists, and untouched for `STALE_AFTER_S`. Returns what it removed.
    Other files, other hosts' temp files (a shared folder) and live writers' are never touched."""
    removed = []
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None or match["host"] != HOST_TAG or int(match["pid"]) == os.getpid():
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or now - entry.stat().st_mtime < STALE_AFTER_S:
                continue
            if _process_alive(int(match["pid"])):
                continue
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue     # gone meanwhile, or not ours to remove
    return removed


def sweep_once(folder: Path) -> None:
    """The first write of this process into `folder` clears what killed runs left there."""
    key = folder.resolve()
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    sweep_stale_temps(key)


def _publish(tmp: str, path: Path, replace: bool) -> None:
    """Rename `tmp` onto `path`; with replace=False an existing `path` is a FileExistsError.
    A hard link is the no-clobber rename POSIX offers (link fails if the name exists)."""
    if replace:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:   # a filesystem without hard links: check, then rename (a small window)
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], mode: int = FILE_MODE,
                 replace: bool = True) -> Path:
    """write(temp_name) fills a temp file; it is fsync'd and renamed onto `path`.

    `replace=False`: a `path` that exists by the time the file is complete is not replaced; a
    `FileExistsError` naming it is raised instead. Raises OSError (message: the final path and
    the reason) and leaves no temp file behind.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_once(path.parent)
        fd, tmp = temp_path_for(path)
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: cannot write ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        _publish(tmp, path, replace)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, f"{path}: exists (written meanwhile by another run; "
                                            "--overwrite to replace it)") from None
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: cannot write ({exc.strerror or exc})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    fsync_directory(path.parent)
    return path
