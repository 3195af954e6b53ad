"""The environment a benchmark row was measured in, captured in one function.

Device name, driver, torch / CUDA / cuDNN / triton versions, Python, the git commit (and whether
the tree had uncommitted changes; a copy without `.git` is checked against its manifest), the
TF32 and cuDNN-autotuner settings. Deliberately hostname-free: rows are meant to be published. This module only
reads; it changes no setting.
"""
from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import torch

from ..switches import switches

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def git_commit(root: Path = REPO_ROOT) -> tuple[str, bool | None]:
    """(HEAD commit, whether tracked files differ from it; None where that is not known).

    A copy of the tree without `.git` (a GPU machine gets one) is checked against the manifest
    `.styleforge-tree` written beside it by `write_manifest` before the copy was made: its commit,
    and each tracked file's git blob hash, so the rows say whether the copy was that commit
    exactly. Without a manifest the commit is `STYLEFORGE_COMMIT` or "unknown", cleanliness unknown.
    """
    commit = _run(["git", "rev-parse", "HEAD"], root)
    manifest = root / MANIFEST
    if manifest.is_file():
        # A copy may also carry a stale `.git` (the GPU machine's holds the session's first
        # commit): a manifest the tree matches exactly names the commit better than that HEAD.
        listed, dirty = check_manifest(root, manifest.read_text())
        if not commit or (listed != commit and dirty is False):
            return listed, dirty
    if not commit:
        return switches().commit or "unknown", None
    dirty = bool(_run(["git", "status", "--porcelain", "--untracked-files=no"], root))
    return commit, dirty


MANIFEST = ".styleforge-tree"


def blob_hash(data: bytes) -> str:
    """The id git gives a file's contents (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_manifest(root: Path = REPO_ROOT) -> Path:
    """`.styleforge-tree`: "commit <sha>" then `git ls-tree -r HEAD`, for a copy without `.git`."""
    commit = _run(["git", "rev-parse", "HEAD"], root)
    listing = _run(["git", "ls-tree", "-r", "HEAD"], root)
    if not commit or not listing:
        raise RuntimeError(f"{root} is not a git checkout")
    path = root / MANIFEST
    path.write_text(f"commit {commit}\n{listing}\n")
    return path


def check_manifest(root: Path, text: str) -> tuple[str, bool]:
    """(commit, dirty) of the tree at `root` against a manifest's text: dirty when a listed file
    is missing or its contents differ (files the commit does not list do not count, as in
    `git status --untracked-files=no`)."""
    lines = text.splitlines()
    commit = lines[0].removeprefix("commit ").strip() if lines and lines[0].startswith("commit ") else "unknown"
    dirty = False
    for line in lines[1:]:
        meta, _, name = line.partition("\t")
        parts = meta.split()
        if len(parts) != 3 or parts[1] != "blob":
            continue          # submodules and blank lines
        path = root / name
        if parts[0] == "120000":
            same = path.is_symlink() and blob_hash(str(path.readlink()).encode()) == parts[2]
        else:
            same = path.is_file() and blob_hash(path.read_bytes()) == parts[2]
        if not same:
            dirty = True
            break
    return commit, dirty


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=None)
def capture_environment(device_type: str, device_index: int = 0) -> dict[str, str]:
    """Everything a row needs to say where it came from (cached: it runs subprocesses)."""
    commit, dirty = git_commit()
    env = {
        "device": device_type,
        "device_name": cpu_name(),
        "driver": "",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "cudnn": str(torch.backends.cudnn.version() or "") if torch.backends.cudnn.is_available() else "",
        "triton": _package_version("triton") or _package_version("pytorch-triton"),
        "python": platform.python_version(),
        "commit": commit,
        "git_dirty": "unknown" if dirty is None else str(dirty).lower(),
        "tf32": "",
        "cudnn_benchmark": str(torch.backends.cudnn.benchmark).lower(),
    }
    if device_type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(device_index)
        query = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader",
                      f"--id={device_index}"])
        env["driver"] = query.splitlines()[0].strip() if query else "unknown"
        env["tf32"] = (f"conv={str(torch.backends.cudnn.allow_tf32).lower()},"
                       f"matmul={str(torch.backends.cuda.matmul.allow_tf32).lower()}")
    return env


if __name__ == "__main__":   # python -m styleforge.bench.env: write the manifest before copying the tree
    print(write_manifest())
