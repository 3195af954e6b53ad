"""The environment a benchmark row was measured in, captured in one function.

Device name, driver, torch / CUDA / cuDNN / triton versions, Python, the git commit (and whether
the tree had uncommitted changes), the TF32 and cuDNN-autotuner settings. Deliberately hostname-free: rows are meant
to be published. This module only reads; it changes no setting.
"""
from __future__ import annotations

import functools
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


def git_commit() -> tuple[str, bool]:
    """(HEAD commit, whether tracked files differ from it).

    A copy of the tree without `.git` (e.g. shipped to a GPU machine) can name its commit in
    `STYLEFORGE_COMMIT`; otherwise it is "unknown".
    """
    commit = _run(["git", "rev-parse", "HEAD"], REPO_ROOT)
    if not commit:
        return switches().commit or "unknown", False
    dirty = bool(_run(["git", "status", "--porcelain", "--untracked-files=no"], REPO_ROOT))
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
        "git_dirty": str(dirty).lower(),
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
