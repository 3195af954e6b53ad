"""Write an `Exportable` as one ONNX file (weights inside), and run such a file in onnxruntime.

The graph comes from `torch.onnx.export` on the `torch.export` program (PyTorch's dynamo-based
exporter, which translates through `onnxscript`: both are in the `export` extra). Instance norms
stay native `InstanceNormalization` nodes; opset 18 by default. The exporter names the output's
height and width after the symbolic pad/crop arithmetic; they equal the input's, so the output's
axes are renamed to the input's names, and the style's metadata goes into `metadata_props`.
Not here: tracing (`trace.py`), the PSNR check (`check.py`).
"""
from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import numpy as np
import torch

from ..io.atomic import atomic_write
from .trace import Exportable, tracing

OUTPUT_NAME = "stylized"


def missing_packages() -> list[str]:
    """What `torch.onnx.export` (dynamo) needs that is not installed."""
    import importlib.util
    return [name for name in ("onnx", "onnxscript") if importlib.util.find_spec(name) is None]


def _onnx_program(item: Exportable, opset: int):
    # The module, not an ExportedProgram, so the dynamic axes keep their names (batch, height,
    # width) in the file. The exporter prints its progress on stdout whatever `verbose` says.
    with tracing(), contextlib.redirect_stdout(io.StringIO()):
        return torch.onnx.export(item.module, item.example, input_names=list(item.input_names),
                                 output_names=[OUTPUT_NAME], opset_version=opset, dynamo=True,
                                 dynamic_shapes=item.dynamic_shapes, external_data=False, verbose=False)


def write_onnx(item: Exportable, path: str | os.PathLike, opset: int) -> Path:
    missing = missing_packages()
    if missing:
        raise RuntimeError(f"exporting to ONNX needs {' and '.join(missing)}: "
                           "pip install \"styleforge[export]\"")
    onnx_program = _onnx_program(item, opset)
    model = onnx_program.model
    first = model.graph.inputs[0]
    model.graph.outputs[0].shape = first.shape      # (batch, 3, height, width): the input's axes
    for key, value in {**item.metadata, "styleforge.min_side": str(item.min_side)}.items():
        model.metadata_props[key if key.startswith("styleforge.") else f"styleforge.{key}"] = value
    return atomic_write(path, lambda tmp: onnx_program.save(tmp, external_data=False))


def onnx_runner(path: str | os.PathLike):
    """(callable: CPU tensors in the file's input order → the output tensor), onnxruntime on the CPU."""
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def run(*inputs: torch.Tensor) -> torch.Tensor:
        feeds = {n: np.ascontiguousarray(t.numpy(), dtype=np.float32) for n, t in zip(names, inputs)}
        return torch.from_numpy(session.run(None, feeds)[0])
    return run
