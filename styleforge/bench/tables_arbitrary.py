"""The arbitrary model's frame-time table from `arbitrary.csv` (`python -m styleforge.bench.arbitrary`).

Per case (the engine's whole frame at the default stroke scale, or the model alone on the whole
frame) and size: the median ms of each provider, and ours against the stronger compile baseline
(`compile-sdpa-bf16`, the model as a PyTorch user would write it). Each line is ONE commit's rows:
the newest commit with both an ours-bf16 and a compile-sdpa-bf16 row for that case and size (or,
with no such commit, the newest commit with any row), so a ratio never divides rows of two
commits. The file holds rows only, no run dates: rows are appended as measured, so a commit's first
row's position orders the commits. Newer ours-bf16 rows that have no compile-sdpa row at their
commit are listed under the table, with the compile providers that do have a row there. A provider
with no row failed the bench's precision gate against eager fp32, failed to compile (the bench
prints why) or was not run. Kept apart from `tables.py` (one formatter per table there, over 400
lines).
"""
from __future__ import annotations

import csv
from pathlib import Path

PROVIDERS = ("eager-fp32", "eager-bf16", "compile-bf16", "compile-sdpa-bf16", "ours-bf16")
COMPILED = tuple(p for p in PROVIDERS if p.startswith("compile"))
CASES = {"arbitrary-stroke-auto": "whole frame, default stroke scale", "arbitrary": "model alone, native size"}
SIZES = {"1x3x1080x1920": "1080p", "1x3x2160x3840": "4K"}
OURS, BASELINE = "ours-bf16", "compile-sdpa-bf16"


def line_commit(by_commit: dict[str, dict[str, float]]) -> str:
    """The commit a (case, size) line shows: the newest with both ours and the baseline, else the
    newest. `by_commit` maps commit → provider → ms, commits oldest first."""
    both = [c for c, cells in by_commit.items() if OURS in cells and BASELINE in cells]
    return (both or list(by_commit))[-1]


def _grouped(rows: list[dict]) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """(model, shape) → commit → provider → ms; commits in the order their first row appears."""
    order = list(dict.fromkeys(r["commit"] for r in rows))
    out: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for r in sorted(rows, key=lambda r: order.index(r["commit"])):
        out.setdefault((r["model"], r["shape"]), {}).setdefault(r["commit"], {})[r["provider"]] = float(r["median_ms"])
    return out


def arbitrary_speed_summary(results: Path) -> str:
    path = results / "arbitrary.csv"
    rows = list(csv.DictReader(path.open())) if path.is_file() else []
    if not rows:
        from .tables import _no_rows  # here, not at the top: tables imports this module
        return _no_rows("benchmarks/results/arbitrary.csv", "python -m styleforge.bench.arbitrary")
    grouped = _grouped(rows)
    lines = ["| case | size | commit | " + " | ".join(PROVIDERS) + " | ours ÷ compile-sdpa |",
             "|---|---|---|" + "---:|" * (len(PROVIDERS) + 1)]
    newer = ["| case | size | commit | ours-bf16 | compile rows at that commit |", "|---|---|---|---:|---|"]
    for model, label in CASES.items():
        for shape, size in SIZES.items():
            by_commit = grouped.get((model, shape))
            if not by_commit:
                continue
            commit = line_commit(by_commit)
            cells = by_commit[commit]
            ours, sdpa = cells.get(OURS), cells.get(BASELINE)
            ratio = f"{ours / sdpa:.2f}" if ours and sdpa else "–"
            lines.append(f"| {label} | {size} | {commit} | "
                         + " | ".join(f"{cells[p]:.2f}" if p in cells else "–" for p in PROVIDERS) + f" | {ratio} |")
            commits = list(by_commit)
            for later in commits[commits.index(commit) + 1:]:
                if OURS in by_commit[later]:
                    compiled = [p for p in COMPILED if p in by_commit[later]]
                    newer.append(f"| {label} | {size} | {later} | {by_commit[later][OURS]:.2f} | "
                                 f"{', '.join(compiled) or 'none'} |")
    gpus = ", ".join(sorted({r["gpu"] for r in rows}))
    torches = ", ".join(sorted({r["torch"] for r in rows}))
    text = ("\n".join(lines) + "\n\n_ms per frame, median; each line is one commit's rows; bf16 rows gated "
            f"against eager fp32 (– : no row at that commit: the gate or the compile failed, or the case was not "
            f"run). Measured: {gpus} · torch {torches}._\n")
    if len(newer) > 2:
        text += ("\nNewer rows of ours with no compile-sdpa-bf16 row at their commit (no ratio: a baseline of "
                 "another commit is never used):\n\n" + "\n".join(newer) + "\n")
    return text
