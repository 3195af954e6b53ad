"""Defining a `styleforge::` op schema exactly once per process.

Schemas live in Python (each ops_*.py module) so CPU-only installs have every op, with its
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
