"""`export_model(options)`: build the graph, write the file atomically, and check it if it can.

The library entry of `styleforge export`: the command only parses flags into `ExportOptions` and
prints the `ExportReport`. The check runs the written file (onnxruntime for ONNX, a loaded
AOTInductor package for `aoti`) against the engine (`check.py`); when onnxruntime is not
installed the ONNX file is still written and the report says why it was not checked.
"""
from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..io.atomic import unwritable_reason
from .check import CheckResult, check_file
from .options import ExportOptions
from .trace import default_output, prepare


@dataclass
class ExportReport:
    path: Path
    format: str
    name: str
    input_names: tuple[str, ...]
    min_side: int
    seconds: float
    checks: list[CheckResult] = field(default_factory=list)
    not_checked: str | None = None     # why there are no checks, when there are none

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def export_model(options: ExportOptions) -> ExportReport:
    start = time.perf_counter()
    item = prepare(options)
    path = default_output(options, item)
    reason = unwritable_reason(path)
    if reason:                          # said before minutes of tracing and compiling, not after
        raise OSError(f"cannot write {path}: {reason}")
    if options.format == "onnx":
        from .to_onnx import onnx_runner, write_onnx
        write_onnx(item, path, options.opset)
        runner = onnx_runner if importlib.util.find_spec("onnxruntime") else None
    else:
        from .to_aoti import aoti_runner, write_aoti
        write_aoti(item, path, options.device)
        runner = lambda p: aoti_runner(p, options.device)
    report = ExportReport(path, options.format, item.name, item.input_names, item.min_side,
                          time.perf_counter() - start)
    if not options.check:
        report.not_checked = "the check was turned off"
    elif runner is None:
        report.not_checked = "onnxruntime is not installed (pip install \"styleforge[export]\")"
    else:
        report.checks = check_file(options, runner(path))
    return report
