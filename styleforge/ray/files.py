"""Where a Ray worker reads an input and writes an output: local paths, URLs, pyarrow and fsspec
filesystems, with the output written exactly once under its final name.

`Location.of(path, filesystem)` names one file: a local path (no filesystem, or pyarrow's
`LocalFileSystem`), a URL (`s3://…`, `gs://…`, `hdfs://…`, `file://…`, resolved by pyarrow, or any
protocol fsspec knows) or a path inside a given `pyarrow.fs.FileSystem` / fsspec filesystem (an
fsspec one is wrapped in pyarrow's `FSSpecHandler`, so one code path serves both).

Writes never clobber and never leave a partial file under the final name. A local output goes
through the job plan's `jobs.write_once` (a claim on the target, a temp file beside it, fsync, a
rename that fails if the name exists; a killed writer's claim and temp file are swept by the
next write into that folder), exactly as the CLI writes. A remote output is
written to `.<name>.<random>.tmp` beside it and moved onto its name only if that name is still
free; on an object store the move is a server-side copy, so readers see the whole object or
none. This module knows nothing about images: callers hand it encoded bytes.
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

from styleforge.io.image import OutputExists


def _pyarrow_fs():
    import pyarrow.fs
    return pyarrow.fs


def as_pyarrow(filesystem: Any):
    """A pyarrow filesystem for `filesystem` (pyarrow's own, or an fsspec one wrapped); None stays None."""
    if filesystem is None:
        return None
    fs = _pyarrow_fs()
    if isinstance(filesystem, fs.FileSystem):
        return filesystem
    try:
        from fsspec import AbstractFileSystem
    except ImportError:
        AbstractFileSystem = ()
    if isinstance(filesystem, AbstractFileSystem):
        return fs.PyFileSystem(fs.FSSpecHandler(filesystem))
    raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem or an fsspec filesystem, "
                    f"not {type(filesystem).__name__}")


def _from_url(url: str):
    """(pyarrow filesystem, path inside it) for a URL; fsspec serves the protocols pyarrow lacks."""
    import pyarrow
    try:
        return _pyarrow_fs().FileSystem.from_uri(url)
    except (pyarrow.ArrowInvalid, pyarrow.ArrowNotImplementedError):   # e.g. memory://, http://
        import fsspec
        filesystem, path = fsspec.core.url_to_fs(url)
        return as_pyarrow(filesystem), path


@dataclass(frozen=True)
class Location:
    """One file: `fs` is None for a local path, else the pyarrow filesystem that holds `path`."""
    path: str
    fs: Any = None

    @classmethod
    def of(cls, path: str | os.PathLike, filesystem: Any = None) -> Location:
        path = os.fspath(path)
        filesystem = as_pyarrow(filesystem)
        if filesystem is None and "://" in path:
            filesystem, path = _from_url(path)
        if filesystem is not None and isinstance(filesystem, _pyarrow_fs().LocalFileSystem):
            filesystem = None       # local: jobs.write_once gives claims, fsync and the no-clobber rename
        return cls(path, filesystem)

    @property
    def local(self) -> bool:
        return self.fs is None

    def join(self, relative: str) -> Location:
        return Location(f"{self.path.rstrip('/')}/{relative}" if self.fs is not None
                        else os.path.join(self.path, relative), self.fs)

    def exists(self) -> bool:
        if self.fs is None:
            from styleforge.jobs import is_done
            return is_done(self.path)
        return self.fs.get_file_info(self.path).type != _pyarrow_fs().FileType.NotFound

    def read_bytes(self) -> bytes:
        with self.fs.open_input_stream(self.path) as stream:
            return stream.read()

    def __str__(self) -> str:
        return self.path


def write_once(target: Location, data: bytes, replace: bool = False) -> None:
    """`data` appears under `target` whole, or not at all. An existing `target` is kept
    (`OutputExists`: an earlier run, or a retry of the same batch, wrote it) unless `replace`."""
    if target.local:
        from styleforge.jobs import write_once as write_local

        def fill(temp: str) -> None:
            with open(temp, "wb") as handle:
                handle.write(data)
        if write_local(target.path, fill, overwrite=replace) is None:
            raise OutputExists(f"{target}: exists or another writer holds it (kept)")
        return
    fs = target.fs
    if not replace and target.exists():
        raise OutputExists(f"{target}: exists (kept; an earlier run or another worker wrote it)")
    folder, _, name = target.path.rpartition("/")
    temp = f"{folder}/.{name[:40]}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        fs.create_dir(folder, recursive=True)
        with fs.open_output_stream(temp) as stream:
            stream.write(data)
        if not replace and target.exists():     # a check, then a move: object stores offer no no-clobber rename
            raise OutputExists(f"{target}: exists (kept; written meanwhile by another worker)")
        fs.move(temp, target.path)
    finally:
        if fs.get_file_info(temp).type != _pyarrow_fs().FileType.NotFound:
            fs.delete_file(temp)
