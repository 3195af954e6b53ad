"""Run the real attention.cu on the CPU through attn_emu.h (conv9x9's warp_emu.h execution model
plus mma with two B registers, ldmatrix.trans, shfl_xor and cp.async, modelled from the PTX ISA).

`build()` rewrites the kernel source's `<<<grid, block, smem, stream>>>` launch into
`emu::launch(...)` and its `extern __shared__` buffer into the emulator's per-block one (with the
helpers in tests/emulators/emulator_common.py), then compiles it with
driver.cpp using g++ (C++20, AddressSanitizer + UBSan). `run(...)` executes one op call and
returns (B, H, Nq, D). Used by tests/test_kernels_attention.py; a test tool for a machine
without a GPU, not shipped.
"""
from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import torch

from styleforge.kernels.build import CSRC  # the one place that knows where the sources live

HERE = Path(__file__).resolve().parent
CU = CSRC / "attention" / "attention.cu"
HEADER = CU.parent / "attention.h"
CONV_EMULATOR = HERE.parent / "conv9x9"      # warp_emu.h
DTYPE_KIND = {torch.float16: 1, torch.bfloat16: 2}


# The helpers all three emulators share (not a package: loaded by path).
_spec = importlib.util.spec_from_file_location("emulator_common", HERE.parent / "emulator_common.py")
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
cuda_include = common.cuda_include


def transform(source: str) -> str:
    return common.rewrite_shared_launches(source, expected=1, source_dir=CU.parent)


def build(workdir: Path, sanitize: bool = True) -> Path:
    return common.compile_emulator(workdir, "attention", transform(CU.read_text()), "ATTENTION_SOURCE",
                                   HERE / "driver.cpp", [HERE, CONV_EMULATOR], sanitize=sanitize)


def run(exe: Path, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor | None,
        scale: float) -> torch.Tensor:
    """One attention call on the emulator: q (B, H, Nq, D), k/v (B, H, Nk, D) fp16/bf16 → (B, H, Nq, D)."""
    b, h, nq, d = q.shape
    nk = k.shape[2]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, t in (("q", q), ("k", k), ("v", v)):
            common.write_tensor(tmp / f"{name}.bin", t)
        argv = [str(exe), f"dtype={DTYPE_KIND[q.dtype]}", f"B={b}", f"H={h}", f"Nq={nq}", f"Nk={nk}", f"D={d}",
                f"scale={scale!r}", f"q={tmp / 'q.bin'}", f"k={tmp / 'k.bin'}", f"v={tmp / 'v.bin'}",
                f"out={tmp / 'out.bin'}"]
        if key_padding_mask is not None:
            common.write_tensor(tmp / "mask.bin", key_padding_mask.to(torch.uint8))
            argv.append(f"mask={tmp / 'mask.bin'}")
        common.run_driver(argv)
        raw = (tmp / "out.bin").read_bytes()
    return torch.frombuffer(bytearray(raw), dtype=q.dtype).view(b, h, nq, d)
