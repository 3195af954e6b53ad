"""Durable, atomic file writes: a temp file beside the target, fsync, rename, fsync the folder.

Every output StyleForge writes (images, weights, training checkpoints) goes through `atomic_write`,
so a crash, a kill or a power cut leaves either the old file or the whole new one under the final
name, never a partial one. The temp name is short and unique (`.<first 40 chars>.<random>.tmp`),
so two writers never collide and a 250-character file name still fits the 255-byte limit.
Errors come out as `OSError`s whose message names the final path, never the temp file, and
`unwritable_reason` finds the usual ones (a folder that is a file, no permission) before any
work is spent. This module knows nothing about formats; callers pass a function that writes.
"""
from __future__ import annotations

import os
import tempfile
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


def temp_path_for(path: Path) -> tuple[int, str]:
    """(open fd, name) of a new unique temp file in the target's folder."""
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.", suffix=".tmp")


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], mode: int = FILE_MODE) -> Path:
    """write(temp_name) fills a temp file; it is fsync'd and renamed onto `path`.

    Raises OSError (message: the final path and the reason) and leaves no temp file behind.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_path_for(path)
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: cannot write ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: cannot write ({exc.strerror or exc})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    fsync_directory(path.parent)
    return path
