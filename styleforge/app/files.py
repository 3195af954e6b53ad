"""The app's own temp folder, and the only ways a request's files get in or out of it.

Everything the server writes lands under one root: Gradio's upload cache (`gradio/`), the gallery
thumbnails (`thumbs/`), results (`outputs/<random>/<name>`) and training jobs (`train/`).
Client-supplied file names are reduced to a plain stem (`safe_stem`) and never used as a path;
an upload is used only if its real path lies inside the upload cache and it is within the byte
limit. Results are pruned as new ones are made (`prune_outputs`): folders older than
`OUTPUT_MAX_AGE_S`, then the oldest until `outputs/` is under `OUTPUT_MAX_BYTES`, never one
younger than `OUTPUT_MIN_AGE_S` (a client may still be downloading it). Not here: decoding
images (`io.image`), which enforces the pixel limit.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
OUTPUT_MAX_AGE_S = 3600.0          # a result is downloadable for an hour
OUTPUT_MAX_BYTES = 1 << 30         # and outputs/ stays under 1 GiB, oldest removed first
OUTPUT_MIN_AGE_S = 300.0           # but nothing younger than five minutes is removed
PRUNE_EVERY_S = 30.0               # a scan of outputs/ at most this often


class UploadError(ValueError):
    """An upload the app will not use; the message is shown to the user as it is."""


def safe_stem(name: str | None, fallback: str = "image") -> str:
    """'../../etc/pass wd.png' → 'pass_wd': the last path part, no suffix, [A-Za-z0-9_-] only."""
    if not name:
        return fallback
    base = PureWindowsPath(PurePosixPath(name).name).name    # both separators
    stem = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
    stem = _UNSAFE.sub("_", stem).strip("_-")[:64]
    return stem or fallback


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class AppFiles:
    """Owns the temp root; `remove()` deletes it when the app created it."""

    def __init__(self, root: str | Path | None = None):
        self.created = root is None
        self.root = Path(tempfile.mkdtemp(prefix="styleforge-serve-") if root is None else root).resolve()
        for name in ("gradio", "thumbs", "outputs", "train"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        self._prune_lock = threading.Lock()
        self._pruned_at = -PRUNE_EVERY_S

    @property
    def upload_dir(self) -> Path:
        return self.root / "gradio"

    def sub(self, name: str) -> Path:
        return self.root / name

    def new_output(self, stem: str, suffix: str) -> Path:
        """A fresh path outputs/<random>/<stem><suffix>; the random folder keeps the nice name
        for the download while two requests never collide."""
        self._maybe_prune()
        folder = self.root / "outputs" / uuid.uuid4().hex
        folder.mkdir(parents=True)
        path = (folder / f"{safe_stem(stem)}{suffix}").resolve()
        if not _inside(path, self.root):
            raise UploadError("refused an output path outside the app's folder")
        return path

    def upload(self, payload: Any, max_bytes: int, what: str = "image") -> tuple[Path, str]:
        """A Gradio file payload (FileData dict or object) → (checked path, display name)."""
        if payload is None:
            raise UploadError(f"no {what}: upload, paste or drop one first")
        if isinstance(payload, (str, Path)):
            raw, orig = str(payload), None
        else:
            get = payload.get if isinstance(payload, dict) else lambda k: getattr(payload, k, None)
            raw, orig = get("path"), get("orig_name")
        if not raw:
            raise UploadError(f"no {what}: upload, paste or drop one first")
        path = Path(raw).resolve()
        display = f"{safe_stem(orig or path.name)}{Path(orig or path.name).suffix.lower()[:8]}"
        if not _inside(path, self.upload_dir.resolve()) or not path.is_file():
            raise UploadError(f"{display}: not an upload of this server")
        size = path.stat().st_size
        if size == 0:
            raise UploadError(f"{display}: the file is empty")
        if size > max_bytes:
            raise UploadError(f"{display}: {size / 2**20:.1f} MB is over the upload limit of "
                              f"{max_bytes / 2**20:.1f} MB")
        return path, display

    def _maybe_prune(self) -> None:
        with self._prune_lock:
            now = time.monotonic()
            if now - self._pruned_at < PRUNE_EVERY_S:
                return
            self._pruned_at = now
        prune_outputs(self.root / "outputs")

    def remove(self) -> None:
        if self.created:
            shutil.rmtree(self.root, ignore_errors=True)


def _tree_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def prune_outputs(outputs: Path, max_age_s: float = OUTPUT_MAX_AGE_S, max_bytes: int = OUTPUT_MAX_BYTES,
                  min_age_s: float = OUTPUT_MIN_AGE_S, now: float | None = None) -> list[Path]:
    """Remove result folders under `outputs`: those older than `max_age_s`, then the oldest until
    the rest fit in `max_bytes`, never one younger than `min_age_s`. Returns what was removed."""
    now = time.time() if now is None else now
    folders = []
    for entry in os.scandir(outputs) if outputs.is_dir() else ():
        if entry.is_dir(follow_symlinks=False):
            try:
                folders.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
            except OSError:
                continue
    folders.sort()
    sizes = {path: _tree_bytes(path) for _, path in folders}
    total, removed = sum(sizes.values()), []
    for mtime, path in folders:                     # oldest first
        age = now - mtime
        if age < min_age_s or (age <= max_age_s and total <= max_bytes):
            continue
        shutil.rmtree(path, ignore_errors=True)
        total -= sizes[path]
        removed.append(path)
    return removed
