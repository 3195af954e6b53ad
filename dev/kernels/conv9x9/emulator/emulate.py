"""Run the real conv9x9.cu on the CPU through warp_emu.h (threads, barriers, mma and ldmatrix
modelled from the PTX ISA).

`build()` rewrites the kernel source's `<<<grid, block, smem, stream>>>` launches into
`emu::launch(...)` calls and its `extern __shared__` buffer into the emulator's per-block one,
then compiles it with driver.cpp using g++ (C++20, AddressSanitizer). `run(...)` executes one op
call and returns the output as an (N, Cout, H, W) channels_last tensor. Used by
tests/test_kernels_conv9x9.py; a development tool for a machine without a GPU, not shipped.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
CU = REPO / "styleforge" / "kernels" / "csrc" / "cuda" / "conv9x9.cu"
HEADER = REPO / "styleforge" / "kernels" / "csrc" / "conv9x9.h"
CUDA_INCLUDE_CANDIDATES = ("/usr/local/cuda/include", "/usr/local/cuda-13.0/include", "/usr/include")
DTYPE_KIND = {torch.float16: 1, torch.bfloat16: 2}

LAUNCH = re.compile(r"(\w+(?:<[^;{}()]*?>)?)<<<(.*?)>>>\((.*?)\);", re.DOTALL)
SHARED = "extern __shared__ __align__(16) unsigned char smem[];"


def _split_top_level(text: str) -> list[str]:
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


def transform(source: str) -> str:
    def launch(m: re.Match) -> str:
        grid, block, smem = _split_top_level(m.group(2))[:3]
        return (f"emu::launch(dim3({grid}), dim3({block}), {smem}, "
                f"[&]() {{ {m.group(1)}({m.group(3)}); }});")

    out, launches = LAUNCH.subn(launch, source)
    shared = out.count(SHARED)
    if launches != 2 or shared != 2:
        raise RuntimeError(f"emulate: expected 2 launches and 2 shared buffers, found {launches} and "
                           f"{shared}; update transform()")
    out = out.replace(SHARED, "unsigned char* smem = emu::ctx.smem;")
    # The transformed copy is compiled elsewhere: point its relative includes at the sources.
    return (out.replace('#include "../conv9x9.h"', f'#include "{HEADER}"')
               .replace('#include "smem_optin.cuh"', f'#include "{CU.parent / "smem_optin.cuh"}"'))


def cuda_include() -> str | None:
    for candidate in CUDA_INCLUDE_CANDIDATES:
        if (Path(candidate) / "cuda_bf16.h").is_file():
            return candidate
    return None


def build(workdir: Path, sanitize: bool = True) -> Path:
    include = cuda_include()
    compiler = shutil.which("g++")
    if include is None or compiler is None:
        raise RuntimeError("emulate: needs g++ and the CUDA headers (cuda_bf16.h)")
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "conv9x9_emulated.inc"
    src.write_text(transform(CU.read_text()))
    exe = workdir / "conv9x9_emu"
    cmd = [compiler, "-std=c++20", "-O1", "-g", "-pthread", "-isystem", include,
           f'-DCONV9X9_SOURCE="{src}"', "-I", str(HERE), str(HERE / "driver.cpp"), "-o", str(exe)]
    if sanitize:
        cmd[2:2] = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"emulate: build failed:\n{proc.stderr[-4000:]}")
    return exe


def _write(path: Path, t: torch.Tensor) -> None:
    path.write_bytes(t.contiguous().view(torch.uint8).numpy().tobytes())


def run(exe: Path, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
        out_float32: bool = False, num_sms: int = 1) -> torch.Tensor:
    """One conv9x9 call on the emulator: x (N, Cin, Hp, Wp) fp16/bf16 → (N, Cout, Hp−8, Wp−8)."""
    n, cin, hp, wp = x.shape
    cout = weight.shape[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _write(tmp / "x.bin", x.permute(0, 2, 3, 1))
        _write(tmp / "w.bin", weight.to(x.dtype))
        argv = [str(exe), f"dtype={DTYPE_KIND[x.dtype]}", f"N={n}", f"Hp={hp}", f"Wp={wp}", f"cin={cin}",
                f"cout={cout}", f"out_float32={int(out_float32)}", f"num_sms={num_sms}",
                f"x={tmp / 'x.bin'}", f"weight={tmp / 'w.bin'}", f"out={tmp / 'out.bin'}"]
        if bias is not None:
            _write(tmp / "b.bin", bias.float())
            argv.append(f"bias={tmp / 'b.bin'}")
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"emulated kernel failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        raw = (tmp / "out.bin").read_bytes()
    dtype = torch.float32 if out_float32 else x.dtype
    out = torch.frombuffer(bytearray(raw), dtype=dtype)
    return out.view(n, hp - 8, wp - 8, cout).permute(0, 3, 1, 2)
