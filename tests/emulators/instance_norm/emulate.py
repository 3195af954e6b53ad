"""Run the real instance_norm.cu on the CPU through a small CUDA emulator (cuda_emu.h).

`build()` rewrites the kernel source's `<<<grid, block, smem, stream>>>` launches into
`emu::launch(...)` calls and its 16-byte stores into alignment-checked ones (loads go through
`__ldg`, which the emulator checks), then
compiles it with the driver using g++ (C++20, AddressSanitizer). `run(...)` executes one op call
and returns the output as a torch tensor in the op's layout. Used by tests/test_cuda_compile.py;
a test tool for a machine without a GPU, not part of the package.
"""
from __future__ import annotations

import importlib.util
import re
import tempfile
from pathlib import Path

import torch

from styleforge.kernels.build import CSRC  # the one place that knows where the sources live

HERE = Path(__file__).resolve().parent
CU = CSRC / "instance_norm" / "instance_norm.cu"
HEADER = CU.parent / "instance_norm.h"
DEVICE_CUH = CU.parent / "instance_norm_device.cuh"
DTYPE_KIND = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}

# The helpers all three emulators share (not a package: loaded by path).
_spec = importlib.util.spec_from_file_location("emulator_common", HERE.parent / "emulator_common.py")
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
cuda_include = common.cuda_include


def transform(source: str) -> str:
    def launch(m: re.Match) -> str:
        config = common.split_top_level(m.group(2))
        return f"emu::launch(dim3({config[0]}), dim3({config[1]}), [&]() {{ {m.group(1)}({m.group(3)}); }});"

    out, count = common.LAUNCH.subn(launch, source)
    if count == 0:
        raise RuntimeError("emulate: found no kernel launches to rewrite")
    # Loads go through __ldg, which cuda_emu.h checks; stores are rewritten to checked ones.
    out, stores = re.subn(r"\*reinterpret_cast<uint4\*>\((\w+)\) = (.*?);", r"emu::store16(\1, \2);", out)
    if stores == 0 or "__ldg(reinterpret_cast<const uint4*>" not in out:
        raise RuntimeError("emulate: the 16-byte accesses changed shape; update transform()")
    return out.replace('#include "instance_norm.h"', f'#include "{HEADER}"')


def build(workdir: Path, sanitize: bool = True) -> Path:
    # The device helpers are inlined so transform() rewrites their 16-byte stores too.
    source = CU.read_text().replace('#include "instance_norm_device.cuh"', DEVICE_CUH.read_text())
    return common.compile_emulator(workdir, "instance_norm", transform(source), "INSTANCE_NORM_SOURCE",
                                   HERE / "driver.cpp", [HERE], defines=("STYLEFORGE_EMULATOR",),
                                   sanitize=sanitize)


def run(exe: Path, x: torch.Tensor, weight=None, bias=None, residual=None, eps: float = 1e-5,
        relu: bool = False, pad: int = 0, upsample: int = 1, num_sms: int = 4,
        x_offset: int = 0, return_plan: bool = False):
    """One op call on the emulator. x's layout decides NCHW vs channels_last (as the op does);
    x_offset shifts x by that many elements inside its buffer to test misaligned starts.
    With return_plan, also returns the launcher's plan (chunks, vector widths, tiles) as a dict."""
    n, c, h, w = x.shape
    channels_last = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    dense = x.permute(0, 2, 3, 1) if channels_last else x
    flat = dense.contiguous().reshape(-1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        common.write_tensor(tmp / "x.bin", torch.cat([torch.zeros(x_offset, dtype=x.dtype), flat]))
        argv = [str(exe), f"dtype={DTYPE_KIND[x.dtype]}", f"channels_last={int(channels_last)}",
                f"N={n}", f"C={c}", f"H={h}", f"W={w}", f"pad={pad}", f"upsample={upsample}",
                f"relu={int(relu)}", f"eps={eps!r}", f"num_sms={num_sms}", f"x_offset={x_offset}",
                f"x={tmp / 'x.bin'}", f"out={tmp / 'out.bin'}"]
        if weight is not None:
            common.write_tensor(tmp / "w.bin", weight.float())
            argv.append(f"weight={tmp / 'w.bin'}")
        if bias is not None:
            common.write_tensor(tmp / "b.bin", bias.float())
            argv.append(f"bias={tmp / 'b.bin'}")
        if residual is not None:
            storage = torch.empty(0, dtype=residual.dtype).set_(residual.untyped_storage())
            common.write_tensor(tmp / "r.bin", storage)
            argv += [f"residual={tmp / 'r.bin'}", f"res_offset={residual.storage_offset()}",
                     *(f"rs{i}={s}" for i, s in enumerate(residual.stride()))]
        proc = common.run_driver(argv)
        raw = (tmp / "out.bin").read_bytes()
    ho, wo = h * upsample + 2 * pad, w * upsample + 2 * pad
    out = torch.frombuffer(bytearray(raw), dtype=x.dtype)
    out = out.view(n, ho, wo, c).permute(0, 3, 1, 2) if channels_last else out.view(n, c, ho, wo)
    if not return_plan:
        return out
    plan = dict(item.split("=") for item in proc.stdout.split())
    return out, {k: int(v) for k, v in plan.items()}
