"""Run the real attention.cu on the CPU through attn_emu.h (conv9x9's warp_emu.h execution model
plus mma with two B registers, ldmatrix.trans, shfl_xor and cp.async, modelled from the PTX ISA).

`build()` rewrites the kernel source's `<<<grid, block, smem, stream>>>` launch into
`emu::launch(...)` and its `extern __shared__` buffer into the emulator's per-block one (the
rewriting rules are conv9x9's emulate.py, imported from there), then compiles it with
driver.cpp using g++ (C++20, AddressSanitizer + UBSan). `run(...)` executes one op call and
returns (B, H, Nq, D). Used by tests/test_kernels_attention.py; a development tool for a machine
without a GPU, not shipped.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
CU = REPO / "styleforge" / "kernels" / "csrc" / "cuda" / "attention.cu"
HEADER = REPO / "styleforge" / "kernels" / "csrc" / "attention.h"
CONV_EMULATOR = REPO / "dev" / "kernels" / "conv9x9" / "emulator"
DTYPE_KIND = {torch.float16: 1, torch.bfloat16: 2}


def _conv_emulate():
    spec = importlib.util.spec_from_file_location("conv9x9_emulate", CONV_EMULATOR / "emulate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transform(source: str) -> str:
    conv = _conv_emulate()

    def launch(m) -> str:
        grid, block, smem = conv._split_top_level(m.group(2))[:3]
        return (f"emu::launch(dim3({grid}), dim3({block}), {smem}, "
                f"[&]() {{ {m.group(1)}({m.group(3)}); }});")

    out, launches = conv.LAUNCH.subn(launch, source)
    shared = out.count(conv.SHARED)
    if launches != 1 or shared != 1:
        raise RuntimeError(f"emulate: expected 1 launch and 1 shared buffer, found {launches} and {shared}; "
                           "update transform()")
    out = out.replace(conv.SHARED, "unsigned char* smem = emu::ctx.smem;")
    # The transformed copy is compiled elsewhere: point its relative includes at the sources.
    return (out.replace('#include "../attention.h"', f'#include "{HEADER}"')
               .replace('#include "smem_optin.cuh"', f'#include "{CU.parent / "smem_optin.cuh"}"'))


def cuda_include() -> str | None:
    return _conv_emulate().cuda_include()


def build(workdir: Path, sanitize: bool = True) -> Path:
    include = cuda_include()
    compiler = shutil.which("g++")
    if include is None or compiler is None:
        raise RuntimeError("emulate: needs g++ and the CUDA headers (cuda_bf16.h)")
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "attention_emulated.inc"
    src.write_text(transform(CU.read_text()))
    exe = workdir / "attention_emu"
    cmd = [compiler, "-std=c++20", "-O1", "-g", "-pthread", "-isystem", include,
           f'-DATTENTION_SOURCE="{src}"', "-I", str(HERE), "-I", str(CONV_EMULATOR),
           str(HERE / "driver.cpp"), "-o", str(exe)]
    if sanitize:
        cmd[2:2] = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"emulate: build failed:\n{proc.stderr[-4000:]}")
    return exe


def _write(path: Path, t: torch.Tensor) -> None:
    path.write_bytes(t.contiguous().view(torch.uint8).numpy().tobytes())


def run(exe: Path, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor | None,
        scale: float) -> torch.Tensor:
    """One attention call on the emulator: q (B, H, Nq, D), k/v (B, H, Nk, D) fp16/bf16 → (B, H, Nq, D)."""
    b, h, nq, d = q.shape
    nk = k.shape[2]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, t in (("q", q), ("k", k), ("v", v)):
            _write(tmp / f"{name}.bin", t)
        argv = [str(exe), f"dtype={DTYPE_KIND[q.dtype]}", f"B={b}", f"H={h}", f"Nq={nq}", f"Nk={nk}", f"D={d}",
                f"scale={scale!r}", f"q={tmp / 'q.bin'}", f"k={tmp / 'k.bin'}", f"v={tmp / 'v.bin'}",
                f"out={tmp / 'out.bin'}"]
        if key_padding_mask is not None:
            _write(tmp / "mask.bin", key_padding_mask.to(torch.uint8))
            argv.append(f"mask={tmp / 'mask.bin'}")
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"emulated kernel failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        raw = (tmp / "out.bin").read_bytes()
    return torch.frombuffer(bytearray(raw), dtype=q.dtype).view(b, h, nq, d)
