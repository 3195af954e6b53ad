"""Defining the `styleforge::` ops exactly once per process, when they are first needed.

Schemas live in Python (each op's module, `<op>.py`) so CPU-only installs have every op, with its
pure-PyTorch twin as the implementation, without compiling anything; the CUDA kernels are added
by the JIT-built extension's TORCH_LIBRARY_IMPL. Defining them is not free (torch records each
registration's source location: ~0.15 s for the thirteen ops on a CPU, more on a GPU host with
more modules loaded), and a CPU stylization never calls them, so importing the package defines
nothing: each op module hands its definitions to `registration`, and `register_ops()` runs them
all, once, where an op may first be called (`dispatch.ensure_cuda_kernels`, the fused engine, the
entries that call `torch.ops.styleforge.*` on any device, and before a `torch.compile` of a model
that calls them, so compiled graphs and CUDA graphs see the same ops as before).
A module reload (tests, importlib.reload) must not define or register twice: the dispatcher
refuses duplicates.
"""
from __future__ import annotations

import threading
from typing import Callable

import torch

NAMESPACE = "styleforge"

_registrations: list[Callable[[], None]] = []
_libraries: list[torch.library.Library] = []   # a Library's registrations last as long as it does
_lock = threading.Lock()
_registered = False


def registration(register: Callable[[], None]) -> Callable[[], None]:
    """Decorator for an op module's function that defines its ops (with `define_once`); it runs
    in `register_ops()`, not at import."""
    _registrations.append(register)
    if _registered:   # a module (re)loaded after the others were registered
        register()
    return register


def register_ops() -> None:
    """Define every `styleforge::` op (schema, twin, fake and autograd formulas) once per process."""
    global _registered
    if _registered:
        return
    with _lock:
        if not _registered:
            for register in _registrations:
                register()
            _registered = True


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
    _libraries.append(lib)
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
