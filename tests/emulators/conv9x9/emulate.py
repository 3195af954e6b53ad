"""Run the real conv9x9.cu on the CPU through warp_emu.h (threads, barriers, mma and ldmatrix
modelled from the PTX ISA).

`build()` rewrites the kernel source's `<<<grid, block, smem, stream>>>` launches into
`emu::launch(...)` calls and its `extern __shared__` buffer into the emulator's per-block one,
then compiles it with driver.cpp using g++ (C++20, AddressSanitizer). `run(...)` executes one op
call and returns the output as an (N, Cout, H, W) channels_last tensor; `run_norm(...)` one
conv9x9_norm launch (conv1 with IN1's statistics through the in-kernel hand-off), returning
(y, scale, shift), after checking that each of `repeat` launches on one state left it zero and
wrote the same bytes. Used by tests/test_kernels_conv9x9.py; a test tool for a machine
without a GPU, not shipped.
"""
from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import torch

from styleforge.kernels.build import CSRC  # the one place that knows where the sources live

HERE = Path(__file__).resolve().parent
CU = CSRC / "conv9x9" / "conv9x9.cu"
HEADER = CU.parent / "conv9x9.h"
DTYPE_KIND = {torch.float16: 1, torch.bfloat16: 2}

# The helpers all three emulators share (not a package: loaded by path).
_spec = importlib.util.spec_from_file_location("emulator_common", HERE.parent / "emulator_common.py")
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
cuda_include = common.cuda_include


def transform(source: str) -> str:
    return common.rewrite_shared_launches(source, expected=2, source_dir=CU.parent)


def build(workdir: Path, sanitize: bool = True) -> Path:
    return common.compile_emulator(workdir, "conv9x9", transform(CU.read_text()), "CONV9X9_SOURCE",
                                   HERE / "driver.cpp", [HERE], sanitize=sanitize)


def _argv(exe: Path, tmp: Path, x: torch.Tensor, weight: torch.Tensor, out_float32: bool, num_sms: int,
          pad: int, tensors: dict) -> list[str]:
    """The driver's arguments for one call, writing x, weight and `tensors` (name: fp32 tensor or None)."""
    n, cin, h, w = x.shape
    if cin == 32 or not (x.is_contiguous() or x.is_contiguous(memory_format=torch.channels_last)):
        x = x.contiguous(memory_format=torch.channels_last)
    # The bytes in storage order (NCHW, or NHWC through the permuted view) and x's own strides.
    dense = x if x.is_contiguous() else x.permute(0, 2, 3, 1)
    sn, sc, sh, sw = x.stride()
    common.write_tensor(tmp / "x.bin", dense)
    common.write_tensor(tmp / "w.bin", weight)
    argv = [str(exe), f"dtype={DTYPE_KIND[weight.dtype]}", f"N={n}", f"H={h}", f"W={w}", f"pad={pad}",
            f"x_float32={int(x.dtype == torch.float32)}", f"sn={sn}", f"sc={sc}", f"sh={sh}", f"sw={sw}",
            f"cin={cin}", f"cout={weight.shape[0]}", f"out_float32={int(out_float32)}", f"num_sms={num_sms}",
            f"x={tmp / 'x.bin'}", f"weight={tmp / 'w.bin'}", f"out={tmp / 'out.bin'}"]
    for name, t in tensors.items():
        if t is not None:
            common.write_tensor(tmp / f"{name}.bin", t.float())
            argv.append(f"{name}={tmp / (name + '.bin')}")
    return argv


def _output(raw: bytes, x: torch.Tensor, weight: torch.Tensor, out_float32: bool, pad: int) -> torch.Tensor:
    n, _, h, w = x.shape
    dtype = torch.float32 if out_float32 else weight.dtype
    out = torch.frombuffer(bytearray(raw), dtype=dtype)
    return out.view(n, h + 2 * pad - 8, w + 2 * pad - 8, weight.shape[0]).permute(0, 3, 1, 2)


def run(exe: Path, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
        out_float32: bool = False, num_sms: int = 1, scale: torch.Tensor | None = None,
        shift: torch.Tensor | None = None, pad: int = 0) -> torch.Tensor:
    """One conv9x9 call on the emulator: x (N, Cin, H, W) → (N, Cout, H + 2·pad − 8, W + 2·pad − 8).

    The head's x is passed dense NHWC, as the bindings make it; conv1's x is passed in its own
    layout (NCHW-contiguous or channels_last) with its strides, fp32 or the weight's dtype."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        common.run_driver(_argv(exe, tmp, x, weight, out_float32, num_sms, pad,
                                {"bias": bias, "scale": scale, "shift": shift}))
        raw = (tmp / "out.bin").read_bytes()
    return _output(raw, x, weight, out_float32, pad)


def run_norm(exe: Path, x: torch.Tensor, weight: torch.Tensor, pad: int = 0, norm_weight: torch.Tensor | None = None,
             norm_bias: torch.Tensor | None = None, eps: float = 1e-5, num_sms: int = 1,
             repeat: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One conv9x9_norm launch on the emulator (conv1, no bias): (y, scale, shift), scale and shift
    (N, 32) fp32. Launched `repeat` times on one zeroed state; the driver fails unless each launch
    leaves the state zero and writes the same bytes."""
    n = x.shape[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        argv = _argv(exe, tmp, x, weight, False, num_sms, pad, {"norm_weight": norm_weight, "norm_bias": norm_bias})
        argv += ["norm=1", f"eps={eps!r}", f"repeat={repeat}", f"scale_out={tmp / 'scale.bin'}",
                 f"shift_out={tmp / 'shift.bin'}"]
        common.run_driver(argv)
        raw = (tmp / "out.bin").read_bytes()
        vectors = [torch.frombuffer(bytearray((tmp / f"{name}.bin").read_bytes()), dtype=torch.float32).view(n, 32)
                   for name in ("scale", "shift")]
    return _output(raw, x, weight, False, pad), vectors[0], vectors[1]
