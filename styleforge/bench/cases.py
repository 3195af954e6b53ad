"""What one op benchmark case is: the contract between per-op bench modules and the harness.

A per-op module `styleforge/bench/op_<name>.py` exposes `cases(device, quick) -> list[OpCase]`.
The harness (`styleforge bench --ops`) checks every provider against `reference` before timing
it, times it, and turns `bytes_moved` / `flops` into GB/s / TFLOP/s and fractions of the
machine's measured copy bandwidth and matmul rate.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch


@dataclass
class OpCase:
    op: str                                   # e.g. "instance_norm_relu"
    shape: str                                # human-readable, e.g. "1x32x1080x1920"
    dtype: torch.dtype
    reference: Callable[[], torch.Tensor]     # fp32/fp64 result used to check every provider
    providers: dict[str, Callable[[], torch.Tensor]]  # name → zero-arg call returning the output
    bytes_moved: int = 0                      # fewest bytes: inputs read once, output written once
    flops: int = 0
    rel_tol: float = 2e-2                     # relative L2 error allowed vs reference
    notes: dict = field(default_factory=dict)
