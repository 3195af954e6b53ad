"""`bench --startup` on the CPU: the floor and two cold one-photo runs, with parts that add up,
no heavy module imported, and the row written with the bar applied."""
from __future__ import annotations

import csv
import json

import pytest

from styleforge.bench.startup import BAR_S, run_startup
from styleforge.cli import main

pytestmark = pytest.mark.slow   # three fresh interpreters importing torch


def test_startup_row_has_the_parts_of_both_runs(tmp_path):
    row = run_startup("cpu", size=(96, 64), log=lambda message: None)
    floor = row.notes["floor_s"]
    assert row.kind == "startup" and floor > 0 and row.notes["bar_s"] == pytest.approx(floor + BAR_S, abs=1e-3)
    for run in (row.notes["first"], row.notes["second"]):
        parts = run["parts"]
        assert set(parts) >= {"interpreter", "imports", "model_load", "decode", "stylize", "write", "compute",
                              "plan", "total"}
        before_work = parts["interpreter"] + parts["imports"] + parts["model_load"]
        assert 0 < before_work <= parts["total"]
        assert parts["decode"] + parts["stylize"] + parts["write"] <= parts["total"] - before_work + 0.05
        assert run["heavy"] == [] and run["dynamo_importer"] is None
    assert row.median_ms == pytest.approx(row.notes["second"]["parts"]["total"] * 1000, abs=1)
    assert row.status == ("ok" if row.notes["second"]["parts"]["total"] <= row.notes["bar_s"] else "failed")


def test_bench_startup_command_appends_a_row(tmp_path):
    code = main(["bench", "--startup", "--device", "cpu", "--output", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "startup.csv")))
    assert len(rows) == 1 and rows[0]["kind"] == "startup" and rows[0]["provider"] == "cpu"
    notes = json.loads(rows[0]["notes"])
    assert code == (0 if rows[0]["status"] == "ok" else 1)
    assert float(rows[0]["median_ms"]) == pytest.approx(notes["second"]["parts"]["total"] * 1000, rel=1e-3)
