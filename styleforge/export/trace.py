"""What gets exported: the graph module, the example inputs it is traced with, and its dynamic axes.

`prepare(options)` loads the weights the engine would load (a built-in style, a checkpoint path,
or the arbitrary model's file), wraps them in `graphs.StyleGraph` / `graphs.ArbitraryGraph`, and
says which axes stay free: batch, height and width of the photo; the painting's shape is fixed.
`tracing()` (which `exported_program` and the ONNX writer trace under) switches the ops to
`kernels.using("reference")`, so the attention and FFN entries take their pure-PyTorch twins and
no `styleforge::` op reaches the graph. Not here: the writers (`to_onnx.py`, `to_aoti.py`).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from .options import ExportOptions

# Example sizes for tracing: not multiples of 4 or 16, so no size-specific shortcut is recorded
# (torch.export also refuses a dynamic axis whose example size is 0 or 1, hence batch 2).
EXAMPLE_BATCH = 2
EXAMPLE_SIDES = (50, 37)


@dataclass
class Exportable:
    name: str                           # the style's name, or "arbitrary"
    module: nn.Module
    example: tuple[torch.Tensor, ...]
    input_names: tuple[str, ...]
    dynamic_shapes: dict                # torch.export's form: {input name: {axis: Dim}}
    min_side: int
    metadata: dict[str, str] = field(default_factory=dict)   # stored in the file where it can be


def _photo_dims(min_side: int) -> dict[int, torch.export.Dim]:
    return {0: torch.export.Dim("batch", min=1),
            2: torch.export.Dim("height", min=min_side),
            3: torch.export.Dim("width", min=min_side)}


def _style_exportable(options: ExportOptions) -> Exportable:
    from ..models.checkpoint import build_model
    from ..models.registry import default_style, load_style, resolve_style
    from .graphs import StyleGraph

    style = options.style or default_style()
    checkpoint = load_style(style)
    name = checkpoint.metadata.get("style") or resolve_style(style).stem
    graph = StyleGraph(build_model(checkpoint))
    example = (torch.rand(EXAMPLE_BATCH, 3, *EXAMPLE_SIDES) * 255,)
    meta = {key: value for key, value in checkpoint.metadata.items()
            if key in ("style", "painting", "artist", "licence")}
    return Exportable(name, graph, example, ("image",), {"image": _photo_dims(graph.min_side)},
                      graph.min_side, meta)


def _arbitrary_exportable(options: ExportOptions) -> Exportable:
    from ..models.arbitrary import load_arbitrary
    from .graphs import ArbitraryGraph

    model, _ = load_arbitrary(options.arbitrary_weights)
    graph = ArbitraryGraph(model, options.passes)
    side = max(graph.min_side, max(EXAMPLE_SIDES))
    example = (torch.rand(EXAMPLE_BATCH, 3, side, side - 13) * 255,
               torch.rand(1, 3, options.style_size, options.style_size) * 255)
    meta = {"style": "arbitrary", "painting_size": str(options.style_size), "passes": str(options.passes)}
    return Exportable("arbitrary", graph, example, ("photo", "painting"),
                      {"photo": _photo_dims(graph.min_side), "painting": None}, graph.min_side, meta)


def prepare(options: ExportOptions) -> Exportable:
    return _arbitrary_exportable(options) if options.arbitrary else _style_exportable(options)


@contextlib.contextmanager
def tracing() -> Iterator[None]:
    """Pure-PyTorch ops (never `torch.ops.styleforge.*`) and no autograd while a graph is traced."""
    from ..kernels import dispatch
    with dispatch.using("reference"), torch.no_grad():
        yield


def exported_program(item: Exportable) -> torch.export.ExportedProgram:
    with tracing():
        return torch.export.export(item.module, item.example, dynamic_shapes=item.dynamic_shapes)


def default_output(options: ExportOptions, item: Exportable) -> Path:
    return options.output_path(item.name)
