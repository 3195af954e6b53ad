"""Write an `Exportable` as an AOTInductor package (`.pt2`), and load such a package.

`torch.export` → `torch._inductor.aoti_compile_and_package`: Inductor generates C++ (CPU) or
Triton/CUDA (GPU) code for the graph with the dynamic axes left symbolic, compiles it into a
shared library and zips it with the weights. The package runs without styleforge (only torch:
`torch._inductor.aoti_load_package`) on the device kind it was compiled for; a CPU build needs a
C++ compiler here and takes minutes. Not here: tracing (`trace.py`), the PSNR check (`check.py`).
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from ..io.atomic import atomic_write
from .trace import Exportable, exported_program


def write_aoti(item: Exportable, path: str | os.PathLike, device: str = "cpu") -> Path:
    item = on_device(item, device)
    program = exported_program(item)

    def write(tmp: str) -> None:
        # aoti_compile_and_package takes a name ending in .pt2 or a seekable buffer; the temp file
        # of the atomic write ends in .tmp, so it gets the buffer.
        with open(tmp, "wb") as handle:
            torch._inductor.aoti_compile_and_package(program, package_path=handle)
    return atomic_write(path, write)


def on_device(item: Exportable, device: str) -> Exportable:
    if device == "cpu":
        return item
    from dataclasses import replace
    return replace(item, module=item.module.to(device), example=tuple(t.to(device) for t in item.example))


def aoti_runner(path: str | os.PathLike, device: str = "cpu"):
    """(callable: CPU tensors in the model's input order → the output tensor on the CPU); `device`:
    the one the package was compiled for."""
    model = torch._inductor.aoti_load_package(os.fspath(path))

    def run(*inputs: torch.Tensor) -> torch.Tensor:
        out = model(*(t.to(device) for t in inputs))
        return (out[0] if isinstance(out, (list, tuple)) else out).cpu()
    return run
