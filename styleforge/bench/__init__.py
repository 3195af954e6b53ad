"""Benchmarks and profiling: honest, reproducible numbers for StyleForge.

`run_suite(BenchConfig(...))` runs the end-to-end table, the per-op cases, the training
throughput and the plots; `harness` times and gates, `results` writes rows, `plot` draws them,
`profile` records a torch.profiler trace. Per-op cases live in `op_<name>.py` modules
(contract: `cases.OpCase`). Importing this package is cheap: submodules load on use.
"""
from __future__ import annotations

__all__ = ["BenchConfig", "run_suite"]


def __getattr__(name: str):
    if name in __all__:
        from . import suite
        return getattr(suite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
