"""Per-op benchmark suite: the machine's ceilings, then every `op_*.py` case through gate and timer.

At the start of a run we MEASURE two ceilings on this machine (never quote a datasheet):
  copy bandwidth  a device-to-device copy of ≥ 1 GiB, bytes read + written
  matmul rate     bf16 8192³ on random data (CPU: fp32 1024³, since CPUs have no bf16 units to speak of)
Each op case (`cases.OpCase`, one module per op: `styleforge/bench/op_<name>.py` exposing
`cases(device, quick)`) is checked provider by provider against its reference (rel L2 ≤ the
case's `rel_tol`) and only then timed; achieved GB/s and TFLOP/s are reported as a fraction of
the roofline min(matmul rate, intensity × copy bandwidth). The op modules own their inputs, so
on CUDA the harness flushes L2 between reps for cases small enough to live in it.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Callable, Iterable

import torch

from . import __path__ as BENCH_PATH
from .cases import OpCase
from .harness import Timer, cache_bytes, check_tensor, describe_error, time_then_gate
from .results import Row

OP_PREFIX = "op_"


@dataclass(frozen=True)
class Ceilings:
    copy_gbps: float
    matmul_tflops: float

    def roofline_tflops(self, intensity: float) -> float:
        return min(self.matmul_tflops, intensity * self.copy_gbps / 1e3)


def discover_op_modules() -> list[str]:
    return sorted(f"{__package__}.{m.name}" for m in pkgutil.iter_modules(BENCH_PATH)
                  if m.name.startswith(OP_PREFIX))


def measure_ceilings(device: torch.device, timer: Timer, quick: bool = False) -> tuple[Ceilings, list[Row]]:
    if device.type == "cuda":
        copy_bytes, n, dtype = (256 << 20 if quick else 1 << 30), 8192, torch.bfloat16
    else:
        copy_bytes, n, dtype = (32 << 20 if quick else 256 << 20), (512 if quick else 1024), torch.float32
    copy = _measure_copy(device, timer, copy_bytes)
    matmul = _measure_matmul(device, timer, n, dtype)
    return Ceilings(copy.gbps, matmul.tflops), [copy, matmul]


def _measure_copy(device: torch.device, timer: Timer, nbytes: int) -> Row:
    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    stats = timer.time(dst.copy_, [src])
    return _ceiling_row("copy", str(nbytes), "uint8", stats, gbps=2 * nbytes / (stats.median_ms / 1e3) / 1e9,
                        notes={"bytes_read_plus_written": 2 * nbytes})


def _measure_matmul(device: torch.device, timer: Timer, n: int, dtype: torch.dtype) -> Row:
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, generator=gen).to(dtype)
    b = torch.randn(n, n, device=device, generator=gen).to(dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
    stats = timer.time(lambda: torch.mm(a, b, out=c))
    return _ceiling_row("matmul", f"{n}x{n}x{n}", str(dtype).removeprefix("torch."), stats,
                        tflops=2 * n**3 / (stats.median_ms / 1e3) / 1e12)


def _ceiling_row(op: str, shape: str, dtype: str, stats, gbps: float | str = "",
                 tflops: float | str = "", notes: dict | None = None) -> Row:
    return Row("ceiling", "torch", op=op, shape=shape, dtype=dtype, median_ms=stats.median_ms,
               p20_ms=stats.p20_ms, p80_ms=stats.p80_ms, reps=stats.reps, timer=stats.timer,
               gbps=gbps, tflops=tflops, notes=notes or {})


def load_cases(module_names: Iterable[str], device: torch.device, quick: bool) -> tuple[list[OpCase], list[Row]]:
    """Import each op module and collect its cases; a module that breaks becomes a failed row."""
    cases, failures = [], []
    for name in module_names:
        short = name.rsplit(".", 1)[-1].removeprefix(OP_PREFIX)
        try:
            module: ModuleType = importlib.import_module(name)
            cases.extend(module.cases(device, quick))
        except Exception as exc:  # one broken op module must not hide the others
            failures.append(Row("op", "-", status="failed", op=short,
                                error=f"{name}.cases(): {describe_error(exc)}"))
    return cases, failures


def run_case(case: OpCase, device: torch.device, reps: int, ceilings: Ceilings | None,
             log: Callable[[str], None] = lambda msg: None) -> list[Row]:
    dtype = str(case.dtype).removeprefix("torch.")
    rows = []
    try:
        with torch.inference_mode():
            reference = case.reference()
    except Exception as exc:
        return [Row("op", "reference", status="failed", op=case.op, shape=case.shape, dtype=dtype,
                    error=f"reference: {describe_error(exc)}", notes=dict(case.notes))]
    flush = device.type == "cuda" and case.bytes_moved < 4 * cache_bytes(device)
    timer = Timer(device, reps=reps, flush_l2=flush)
    for provider, call in case.providers.items():
        row = Row("op", provider, op=case.op, shape=case.shape, dtype=dtype, notes=dict(case.notes))
        outcome = time_then_gate(call, partial(check_tensor, ref=reference, rel_tol=case.rel_tol),
                                 partial(timer.time, call))
        row.status, row.error = outcome.status, outcome.error
        row.notes["rel_tol"] = case.rel_tol
        if outcome.gate is not None:
            row.rel_err = outcome.gate.rel_err
        if outcome.stats is not None:
            fill_rates(row, outcome.stats, case, ceilings)
        log(f"{case.op} {case.shape} {dtype} {provider}: "
            + (f"[green]ok[/] {row.median_ms:.4f} ms" if row.status == "ok" else f"[red]failed[/] {row.error}"))
        rows.append(row)
    medians = {r.provider: r.median_ms for r in rows if r.status == "ok"}
    if "torch" in medians:
        for r in rows:
            if r.status == "ok":
                r.notes["speedup_vs_torch"] = round(medians["torch"] / r.median_ms, 3)
    return rows


def fill_rates(row: Row, stats, case: OpCase, ceilings: Ceilings | None) -> None:
    seconds = stats.median_ms / 1e3
    row.median_ms, row.p20_ms, row.p80_ms, row.reps, row.timer = (
        stats.median_ms, stats.p20_ms, stats.p80_ms, stats.reps, stats.timer)
    if case.bytes_moved:
        row.gbps = case.bytes_moved / seconds / 1e9
    if case.flops:
        row.tflops = case.flops / seconds / 1e12
    if case.flops and case.bytes_moved:
        row.intensity = case.flops / case.bytes_moved
    if ceilings is None:
        return
    if case.flops and case.bytes_moved:
        row.fraction_of_ceiling = row.tflops / ceilings.roofline_tflops(row.intensity)
    elif case.bytes_moved:
        row.fraction_of_ceiling = row.gbps / ceilings.copy_gbps
    elif case.flops:
        row.fraction_of_ceiling = row.tflops / ceilings.matmul_tflops


def run_ops(device: torch.device, reps: int, quick: bool = False, modules: Iterable[str] | None = None,
            cases: list[OpCase] | None = None, log: Callable[[str], None] = lambda msg: None) -> list[Row]:
    """Ceilings first, then every case of every op module (or the `cases` given, for tests)."""
    ceilings, rows = measure_ceilings(device, Timer(device, reps=max(5, min(reps, 20))), quick)
    log(f"ceilings: copy {ceilings.copy_gbps:.1f} GB/s, matmul {ceilings.matmul_tflops:.1f} TFLOP/s")
    if cases is None:
        names = discover_op_modules() if modules is None else list(modules)
        if not names:
            log("[yellow]no op_*.py benchmark modules found[/]")
        cases, failures = load_cases(names, device, quick)
        rows.extend(failures)
    for case in cases:
        rows.extend(run_case(case, device, reps, ceilings, log))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows
