"""The whole benchmark run as a library call: `run_suite(BenchConfig(...))`.

Order: end to end (rows appended after each size, so a run cut short keeps what it measured),
then ops (ceilings first), then training, then the stored tables (`report`), the Markdown table
and the plots, all drawn from rows. Every
`styleforge bench` flag is a `BenchConfig` field; the command only parses and prints.
Not here: how anything is timed (`harness`) or measured (`endtoend`, `ops`, `training`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from ..engine.backends import resolve_device
from .harness import Timer
from .results import DEFAULT_OUTPUT, Row, append_rows, new_run_id

DEFAULT_SIZES = {"cuda": "256,512,1080p,4k", "cpu": "256"}
DEFAULT_REPS = {"cuda": 30, "cpu": 5}
DEFAULT_OP_REPS = {"cuda": 50, "cpu": 5}


@dataclass(frozen=True)
class BenchConfig:
    device: str = "auto"
    sizes: str | None = None          # None: DEFAULT_SIZES for the device
    batch_size: int = 1
    providers: str | None = None      # comma list; None: all
    compile_modes: str | None = None  # comma list of torch.compile modes kept; None: all three
    time_budget: float | None = None  # seconds: e2e providers not started by then are skipped
    run_id: str | None = None         # share one run id between invocations (a device script's parts)
    reps: int | None = None           # None: DEFAULT_REPS / DEFAULT_OP_REPS
    warmup: int = 3
    style: str | None = None
    output: str = str(DEFAULT_OUTPUT)
    e2e: bool = True
    ops: bool = False
    training: bool = False
    plot: bool = False
    report: bool = False              # re-print the latest stored run of each kind not measured now
    markdown: str | None = None       # also write the end-to-end rows as a Markdown table here
    quick: bool = False
    train_batch_size: int = 8
    train_size: int = 256
    train_steps: int = 50
    train_warmup: int = 10
    train_compile: bool = False
    vgg_weights: str | None = None

    def __post_init__(self):
        if self.batch_size < 1 or self.train_batch_size < 1:
            raise ValueError("batch sizes must be ≥ 1")
        if self.reps is not None and self.reps < 1:
            raise ValueError(f"--reps must be ≥ 1, got {self.reps}")
        if self.time_budget is not None and self.time_budget <= 0:
            raise ValueError(f"--time-budget must be > 0 seconds, got {self.time_budget}")


@dataclass
class SuiteResult:
    run_id: str
    e2e: list[Row] = field(default_factory=list)
    ops: list[Row] = field(default_factory=list)
    training: list[Row] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plot_error: str = ""

    @property
    def rows(self) -> list[Row]:
        return self.e2e + self.ops + self.training

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.status == "failed"]


def run_suite(config: BenchConfig, log: Callable[[str], None] = lambda msg: None) -> SuiteResult:
    device = resolve_device(config.device)
    result = SuiteResult(config.run_id or new_run_id())

    def keep(rows: list[Row]) -> None:
        for row in rows:
            row.stamp(result.run_id, device.type)
        for path in append_rows(rows, config.output):
            if path not in result.files:
                result.files.append(path)

    if config.e2e:
        from .endtoend import Deadline, load_bench_style, parse_providers, parse_sizes, run_size
        sizes = parse_sizes(config.sizes or DEFAULT_SIZES.get(device.type, "256"))
        providers = parse_providers(config.providers, config.compile_modes)
        deadline = Deadline.after(config.time_budget)
        checkpoint, note = load_bench_style(config.style)
        if note:
            result.notes.append(note)
            log(f"[yellow]{note}[/]")
        timer = Timer(device, reps=config.reps or DEFAULT_REPS.get(device.type, 5), warmup=config.warmup)
        for size in sizes:
            rows = run_size(size, checkpoint, device, providers, config.batch_size, timer, log, deadline)
            for row in rows:
                row.notes["style"] = checkpoint.metadata.get("style", "custom")
            keep(rows)
            result.e2e.extend(rows)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    if config.ops:
        from .ops import run_ops
        rows = run_ops(device, config.reps or DEFAULT_OP_REPS.get(device.type, 5), config.quick, log=log)
        keep(rows)
        result.ops.extend(rows)
    if config.training:
        from .training import run_training
        log("training benchmark …")
        row = run_training(device.type, config.train_batch_size, config.train_size, config.train_steps,
                           config.train_warmup, config.train_compile, config.vgg_weights)
        keep([row])
        result.training.append(row)
    if config.report:
        from .results import latest_run, read_rows, row_from_record
        for kind, rows in (("e2e", result.e2e), ("op", result.ops), ("training", result.training)):
            if not rows:
                stored = latest_run(read_rows(config.output, kind))
                if kind == "op":
                    run_ids = {r["run_id"] for r in stored}
                    stored = [r for r in read_rows(config.output, "ceiling") if r["run_id"] in run_ids] + stored
                rows.extend(row_from_record(r) for r in stored)
    if config.markdown and result.e2e:
        from .report import e2e_markdown
        path = Path(config.markdown)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(e2e_markdown(result.e2e))
        result.files.append(path)
    if config.plot:
        from .plot import PlotUnavailable, plot_results
        try:
            result.plots = plot_results(config.output)
        except PlotUnavailable as exc:   # the measurements above still count
            result.plot_error = str(exc)
        else:
            if not result.plots:
                result.notes.append(f"no ok rows in {config.output} to plot yet")
    return result
