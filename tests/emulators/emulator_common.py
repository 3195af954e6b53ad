"""What the three CPU emulators (tests/emulators/{instance_norm,conv9x9,attention}) share:
finding `<<<...>>>` launches in a kernel source, the CUDA headers, compiling a rewritten source with
its driver.cpp under g++ (C++20, AddressSanitizer + UBSan), and the files the drivers read and write.
Each emulate.py keeps only what is its kernel's own: the rewriting rules, the driver's arguments and
the output's shape. A development tool for a machine without a GPU, not shipped.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent     # emulator_driver.h, the drivers' shared C++ helpers
CUDA_INCLUDE_CANDIDATES = ("/usr/local/cuda/include", "/usr/local/cuda-13.0/include", "/usr/include")
# kernel<T, ...><<<grid, block[, smem[, stream]]>>>(args);
LAUNCH = re.compile(r"(\w+(?:<[^;{}()]*?>)?)<<<(.*?)>>>\((.*?)\);", re.DOTALL)
# The tensor-core kernels' dynamic shared buffer, which the emulators replace by a per-block one.
EXTERN_SHARED = "extern __shared__ __align__(16) unsigned char smem[];"


def split_top_level(text: str) -> list[str]:
    """`a, f(b, c), d<e, f>` → ['a', 'f(b, c)', 'd<e, f>']: commas outside brackets only."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts


def rewrite_shared_launches(source: str, expected: int, source_dir: Path) -> str:
    """The tensor-core kernels' rules: each `kernel<<<grid, block, smem, stream>>>(args);` becomes
    `emu::launch(grid, block, smem, [&] { kernel(args); });` and each `extern __shared__` buffer the
    emulator's per-block one. `expected` launches and buffers must be found, else the source changed
    shape and the rules need a look. The copy is compiled elsewhere, so its relative includes are
    pointed at `source_dir`, the folder of the source it was read from."""
    def launch(m: re.Match) -> str:
        grid, block, smem = split_top_level(m.group(2))[:3]
        return (f"emu::launch(dim3({grid}), dim3({block}), {smem}, "
                f"[&]() {{ {m.group(1)}({m.group(3)}); }});")

    out, launches = LAUNCH.subn(launch, source)
    shared = out.count(EXTERN_SHARED)
    if launches != expected or shared != expected:
        raise RuntimeError(f"emulate: expected {expected} launches and shared buffers, found {launches} and "
                           f"{shared}; update the rewriting rules")
    out = out.replace(EXTERN_SHARED, "unsigned char* smem = emu::ctx.smem;")
    return re.sub(r'#include "([\w./]+\.(?:cuh|h))"',
                  lambda m: f'#include "{(source_dir / m.group(1)).resolve()}"', out)


def cuda_include() -> str | None:
    for candidate in CUDA_INCLUDE_CANDIDATES:
        if (Path(candidate) / "cuda_bf16.h").is_file():
            return candidate
    return None


def compile_emulator(workdir: Path, name: str, source_text: str, source_macro: str, driver: Path,
                     include_dirs: list[Path], defines: tuple[str, ...] = (), sanitize: bool = True) -> Path:
    """Write the rewritten kernel source to workdir/<name>_emulated.inc and compile `driver` (which
    includes it through the macro `source_macro`) into workdir/<name>_emu; returns the executable."""
    include = cuda_include()
    compiler = shutil.which("g++")
    if include is None or compiler is None:
        raise RuntimeError("emulate: needs g++ and the CUDA headers (cuda_bf16.h)")
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"{name}_emulated.inc"
    src.write_text(source_text)
    exe = workdir / f"{name}_emu"
    cmd = [compiler, "-std=c++20", "-O1", "-g", "-pthread", "-isystem", include, f'-D{source_macro}="{src}"',
           *(f"-D{d}" for d in defines), *(arg for d in (*include_dirs, HERE) for arg in ("-I", str(d))), str(driver),
           "-o", str(exe)]
    if sanitize:
        cmd[2:2] = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"emulate: build failed:\n{proc.stderr[-4000:]}")
    return exe


def write_tensor(path: Path, t: torch.Tensor) -> None:
    """The tensor's bytes, dense, as the drivers read them."""
    path.write_bytes(t.contiguous().view(torch.uint8).numpy().tobytes())


def run_driver(argv: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"emulated kernel failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc
