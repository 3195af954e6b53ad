"""Defining a `styleforge::` op schema exactly once per process.

Schemas live in Python (each op's module, `<op>.py`) so CPU-only installs have every op, with its
pure-PyTorch twin as the implementation, without compiling anything; the CUDA kernels are added
by the JIT-built extension's TORCH_LIBRARY_IMPL. A module reload (tests, importlib.reload) must
not define or register twice: the dispatcher refuses duplicates.
"""
from __future__ import annotations

import torch

NAMESPACE = "styleforge"


def define_once(schema: str) -> tuple[torch.library.Library, bool]:
    """(library fragment, whether this call defined the op) for `name(args) -> ret`."""
    qualname = f"{NAMESPACE}::{schema.split('(', 1)[0]}"
    try:
        torch._C._dispatch_find_schema_or_throw(qualname, "")
        first = False
    except RuntimeError:
        first = True
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")
    if first:
        lib.define(schema)
    return lib, first


def backward_through_reference(reference, tensors: tuple, needs_input_grad: tuple, grad: torch.Tensor,
                               num_inputs: int) -> tuple:
    """Autograd's gradient tuple for an op whose backward differentiates its pure-PyTorch twin.

    `reference(*tensors)` recomputes the forward from the op's tensor inputs (the first
    `len(tensors)` of its `num_inputs`); only those present and needing a gradient are
    differentiated. Correct, not fast: the forward runs again.
    """
    slots = [i for i, t in enumerate(tensors) if t is not None and needs_input_grad[i]]
    result: list[torch.Tensor | None] = [None] * num_inputs
    if not slots:
        return tuple(result)

    def forward(*diff):
        args = list(tensors)
        for i, t in zip(slots, diff):
            args[i] = t
        return reference(*args)

    _, vjp = torch.func.vjp(forward, *(tensors[i] for i in slots))
    for i, g in zip(slots, vjp(grad)):
        result[i] = g
    return tuple(result)
