"""Output names for dataset rows that carry no planned `target`: the library's naming rule applied
to a row's path, so a Ray run over `read_binary_files(folder)` names its outputs as
`styleforge stylize folder/* -o OUT` does.

Only the relative part is decided here: the file's name (or, with `root`, its path below `root`,
sub-folders kept). The rule itself (`photo.jpg` → `photo_<label>.jpg`, unwritable suffixes → .png,
the 255-byte limit) is the job plan's (`jobs.naming`); this module only adapts it to paths that may be URLs or
paths inside a remote filesystem (always `/`-separated).
"""
from __future__ import annotations

import posixpath

from styleforge.jobs import output_label, styled_name, writable_name

__all__ = ["output_label", "target_name"]


def _posix(path: str) -> str:
    path = path.replace("\\", "/")
    return path.split("://", 1)[1] if "://" in path else path


def target_name(path: str, label: str, root: str | None = None, keep_names: bool = False) -> str:
    """The output's path relative to the output folder, for the input `path`."""
    path = _posix(str(path))
    if root is not None:
        relative = posixpath.relpath(path, _posix(str(root)))
        if relative.startswith("../") or relative == "..":
            raise ValueError(f"{path}: not inside root {root}")
    else:
        relative = posixpath.basename(path)
    return writable_name(relative) if keep_names else styled_name(relative, label)
