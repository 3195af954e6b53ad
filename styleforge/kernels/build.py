"""Just-in-time build of the CUDA kernels with `torch.utils.cpp_extension.load` (ninja, nvcc).

The choice is JIT, not an ahead-of-time `setup.py` extension: the wheel stays pure Python
(CPU installs need no compiler), and the build targets exactly the GPU, PyTorch and CUDA it
runs on. The first use takes about a minute; the library is cached under
`~/.cache/styleforge/kernels/<key>/` (or `$STYLEFORGE_CACHE_DIR`, or `$XDG_CACHE_HOME`: `switches.py`), where
the key hashes the sources, the flags, the GPU architecture and the PyTorch/CUDA versions, so
a change in any of them rebuilds instead of loading a stale library. `styleforge build`
prebuilds. Building, loading and `--force`'s deletion all happen under the cache entry's build
lock (`build_lock.py`: bounded wait, announced, never blocked by a killed build).
This module does not register ops (each op's module does) and does not decide fallbacks.
"""
from __future__ import annotations

import hashlib
import logging
import shutil
import sys
from pathlib import Path

import torch

from ..switches import switches
from .build_lock import DEFAULT_TIMEOUT_S, build_lock

log = logging.getLogger(__name__)

CSRC = Path(__file__).resolve().parent / "csrc"
# csrc/<op>/: the op's header, binding (<op>_binding.cpp) and kernels; csrc/common/: shared device
# helpers. Base names stay unique: the JIT build names each object file after its source's.
SOURCES = ("instance_norm/instance_norm_binding.cpp", "instance_norm/instance_norm.cu",
           "instance_norm/instance_norm_single.cu",
           "conv9x9/conv9x9_binding.cpp", "conv9x9/conv9x9.cu", "conv9x9/conv9x9_sm90.cu",
           "conv3x3/conv3x3_binding.cpp", "conv3x3/conv3x3.cu", "conv3x3/conv3x3_chain.cu",
           "attention/attention_binding.cpp", "attention/attention.cu", "attention/attention_sm90.cu",
           "arbitrary/arbitrary_glue_binding.cpp", "arbitrary/arbitrary_glue.cu",
           "graph_io/graph_io.cpp")
# Every header the sources include, found rather than listed, so that no edit to one is missed by
# the cache key (a list had left four out).
HEADERS = tuple(sorted(str(p.relative_to(CSRC)) for pattern in ("**/*.h", "**/*.cuh") for p in CSRC.glob(pattern)))
EXTENSION_NAME = "styleforge_kernels"
# No --use_fast_math: it flushes denormals and buys nothing for these memory-bound kernels.
CUDA_FLAGS = ("-O3", "-lineinfo")
CXX_FLAGS = ("-O3",)


def arch_flags(capability: tuple[int, int]) -> list[str]:
    """nvcc code generation for exactly this GPU: sm_90a on Hopper, sm_XY elsewhere."""
    major, minor = capability
    arch = f"{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")
    return [f"-gencode=arch=compute_{arch},code=sm_{arch}"]


def device_capability(capability: tuple[int, int] | None = None) -> tuple[int, int]:
    if capability is not None:
        return capability
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device to build for (pass an explicit architecture, e.g. --arch 9.0)")
    return torch.cuda.get_device_capability()


def cache_root() -> Path:
    settings = switches()
    if settings.cache_dir:
        return settings.cache_dir / "kernels"
    return (settings.xdg_cache_home or Path.home() / ".cache") / "styleforge" / "kernels"


def build_key(capability: tuple[int, int]) -> str:
    digest = hashlib.sha256()
    for name in (*SOURCES, *HEADERS):
        digest.update(name.encode())
        digest.update((CSRC / name).read_bytes())
    for part in (torch.__version__, str(torch.version.cuda), sys.version.split()[0],
                 *CUDA_FLAGS, *CXX_FLAGS, *arch_flags(capability)):
        digest.update(part.encode())
    return digest.hexdigest()[:16]


def build_directory(capability: tuple[int, int]) -> Path:
    major, minor = capability
    return cache_root() / f"sm{major}{minor}-{build_key(capability)}"


def library_path(capability: tuple[int, int]) -> Path:
    return build_directory(capability) / f"{EXTENSION_NAME}.so"


def _status(message: str):
    """A rich spinner on stderr; a logged line where rich is missing (a bare GPU box)."""
    try:
        from rich.console import Console
    except ImportError:
        import contextlib
        log.warning(message)
        return contextlib.nullcontext()
    return Console(stderr=True).status(message)


def _announce(message: str) -> None:
    try:
        from rich.console import Console
    except ImportError:
        log.warning(message)
        return
    Console(stderr=True, highlight=False).print(message)


def build_and_load(capability: tuple[int, int] | None = None, verbose: bool = False,
                   force: bool = False, lock_timeout: float = DEFAULT_TIMEOUT_S) -> Path:
    """Compile if needed, load into this process (registers the CUDA kernels), return the .so path.

    Raises BuildLockTimeout when another build holds the cache entry for `lock_timeout` s."""
    capability = device_capability(capability)
    directory = build_directory(capability)
    with build_lock(directory, lock_timeout, on_wait=_announce):
        return _build_locked(capability, directory, verbose, force)


def _build_locked(capability: tuple[int, int], directory: Path, verbose: bool, force: bool) -> Path:
    if force and directory.exists():
        shutil.rmtree(directory)
    path = library_path(capability)
    if path.exists() and not verbose:
        # The key already hashes every source, header, flag and version, so a library under it is
        # current: load it directly. cpp_extension.load would import setuptools, run nvcc --version
        # and ninja to find that out, which is most of a cached start. A library a killed build
        # left half-written fails to load and is rebuilt below.
        try:
            torch.ops.load_library(str(path))
            log.info("StyleForge CUDA kernels loaded from %s", path)
            return path
        except OSError:
            path.unlink(missing_ok=True)   # else ninja finds it newer than its sources and keeps it
    from torch.utils import cpp_extension
    directory.mkdir(parents=True, exist_ok=True)
    fresh = not library_path(capability).exists()
    kwargs = dict(
        name=EXTENSION_NAME,
        sources=[str(CSRC / s) for s in SOURCES],
        extra_cflags=list(CXX_FLAGS),
        extra_cuda_cflags=[*CUDA_FLAGS, *arch_flags(capability)],
        build_directory=str(directory),
        verbose=verbose,
        is_python_module=False,
    )
    if fresh and not verbose:
        with _status("building StyleForge CUDA kernels (first use, ~1 min)…"):
            cpp_extension.load(**kwargs)
    else:
        cpp_extension.load(**kwargs)
    path = library_path(capability)
    log.info("StyleForge CUDA kernels %s %s", "built at" if fresh else "loaded from", path)
    return path
