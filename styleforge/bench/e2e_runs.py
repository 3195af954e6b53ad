"""Which end-to-end runs a table may show, and which of their rows may share a ratio.

A device call can be cut short (a time budget, a lost machine), so the newest run in `e2e.csv`
may hold only some sizes or providers. Two selections keep the tables honest about that:

- `latest_complete_run`: the newest run that is *complete*, i.e. for every size in
  `COMPLETE_SIZES` (what `styleforge bench --e2e` measures on CUDA by default) it has an `ok`
  row of each provider in `COMPLETE_PROVIDERS` (eager fp32 and both fused precisions). A partial
  newer run never replaces it.
- `best_compile_pairs`: per size of a reference run and per precision, the fastest `ok`
  `torch.compile` row measured in *any* run on the same GPU and torch, from a clean tree, paired
  with the fused row of that precision *from the same run*. The ratio of a pair never mixes
  runs; a best compile whose run has no fused row of its precision is paired with None.

Selection only: formatting is `tables.py`'s job, timing `endtoend.py`'s.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .results import as_float

COMPLETE_SIZES = ("256", "512", "1080p", "4k")          # = suite.DEFAULT_SIZES["cuda"]
COMPLETE_PROVIDERS = ("eager-fp32", "fused-bf16", "fused-fp16")
PRECISIONS = ("bf16", "fp16")


def ms_per_frame(row: dict | None) -> float | None:
    """A row's median divided by its batch; None unless the row ran (`status` ok) with a median."""
    if row is None or row.get("status") != "ok":
        return None
    ms = as_float(row.get("median_ms"))
    if ms is None:
        return None
    batch = str(row.get("batch", ""))
    return ms / int(batch) if batch.isdigit() and int(batch) > 0 else ms


def by_run(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows grouped by run id, oldest run first (run ids sort by time)."""
    runs: dict[str, list[dict]] = {}
    for r in rows:
        runs.setdefault(r["run_id"], []).append(r)
    return dict(sorted(runs.items()))


def is_complete(run: list[dict]) -> bool:
    """Every size of `COMPLETE_SIZES` has a timed row of every provider of `COMPLETE_PROVIDERS`."""
    timed = {(r["size"], r["provider"]) for r in run if ms_per_frame(r) is not None}
    return all((size, p) in timed for size in COMPLETE_SIZES for p in COMPLETE_PROVIDERS)


def latest_complete_run(rows: list[dict]) -> list[dict]:
    """The rows of the newest complete run among `rows`; [] when no run is complete."""
    complete = [run for run in by_run(rows).values() if is_complete(run)]
    return complete[-1] if complete else []


def is_compile(row: dict) -> bool:
    return row["provider"].startswith("compile")


def compile_mode(row: dict) -> str:
    """The torch.compile mode of a compile row (rows before the modes were split say `compile`:
    reduce-overhead)."""
    notes = json.loads(row["notes"]) if row.get("notes") else {}
    return notes.get("compile_mode") or ("reduce-overhead" if row["provider"] == "compile" else "?")


@dataclass(frozen=True)
class Pair:
    """The fastest compile row of one size and precision, and the fused row of its own run."""
    size: str
    precision: str
    compile: dict
    fused: dict | None
    modes_measured: tuple[str, ...]     # every compile mode timed at this size and precision

    @property
    def ratio(self) -> float | None:
        """Compile's ms per frame over fused's, both from `compile`'s run; None without fused."""
        fused = ms_per_frame(self.fused)
        return None if fused is None else ms_per_frame(self.compile) / fused


def comparable(row: dict, reference: dict) -> bool:
    """Measured on the reference's GPU and torch, at a commit with no uncommitted changes."""
    return (row.get("device") == reference.get("device") and row.get("device_name") == reference.get("device_name")
            and row.get("torch") == reference.get("torch") and row.get("git_dirty") == "false")


def best_compile_pairs(rows: list[dict], reference: list[dict]) -> list[Pair]:
    """For each size of `reference` (a run, in its order) and each precision: the fastest timed
    compile row among the `comparable` rows of any run, and the fused row of that run."""
    if not reference:
        return []
    usable = [r for r in rows if comparable(r, reference[0])]
    runs = by_run(usable)
    pairs = []
    for size in dict.fromkeys(r["size"] for r in reference):
        for precision in PRECISIONS:
            timed = [r for r in usable if r["size"] == size and r.get("dtype") == precision and is_compile(r)
                     and ms_per_frame(r) is not None]
            if not timed:
                continue
            best = min(timed, key=ms_per_frame)
            fused = next((r for r in runs[best["run_id"]] if r["size"] == size
                          and r["provider"] == f"fused-{precision}" and ms_per_frame(r) is not None), None)
            modes = tuple(sorted({compile_mode(r) for r in timed}))
            pairs.append(Pair(size, precision, best, fused, modes))
    return pairs
