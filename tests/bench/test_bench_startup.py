"""`bench --startup`: the parts of a run partition its total (the arithmetic, and on the CPU the
floor and two cold one-photo runs), no heavy module is imported, and the row has the bar applied."""
from __future__ import annotations

import csv
import json

import pytest

from styleforge.bench.startup import BAR_S, PARTS, partition, run_startup
from styleforge.cli import main


def test_partition_gives_each_moment_to_one_part_and_names_the_gaps():
    # model_load 1-3, decode 2.5-4 (overlapping: the later start takes the overlap), write 6-7.
    seconds, gaps = partition((0.0, 10.0), {"model_load": (1.0, 3.0), "decode": (2.5, 4.0),
                                            "write": (6.0, 7.0), "outside": (11.0, 12.0)})
    assert seconds == pytest.approx({"model_load": 1.5, "decode": 1.5, "write": 1.0, "other": 6.0})
    assert sum(seconds.values()) == pytest.approx(10.0)
    assert sorted(gaps, reverse=True) == [(pytest.approx(3.0), "after write, before end"),
                                          (pytest.approx(2.0), "after decode, before write"),
                                          (pytest.approx(1.0), "after start, before model_load")]


@pytest.mark.slow   # three fresh interpreters importing torch
def test_startup_row_has_the_parts_of_both_runs(tmp_path):
    row = run_startup("cpu", size=(96, 64), log=lambda message: None)
    floor = row.notes["floor_s"]
    assert row.kind == "startup" and floor > 0 and row.notes["bar_s"] == pytest.approx(floor + BAR_S, abs=1e-3)
    for run in (row.notes["first"], row.notes["second"]):
        parts = run["parts"]
        assert list(parts) == [*PARTS, "total"]
        assert sum(parts[k] for k in PARTS) == pytest.approx(parts["total"], abs=0.01)
        for timed in ("imports", "model_load", "decode", "stylize", "write", "exit"):
            assert parts[timed] > 0, timed
        assert parts["other"] < 0.5 * parts["total"]   # the timed calls cover the run
        assert {"weights", "build_model", "runner", "plan", "exit_atexit"} <= set(run["details"])
        assert run["details"]["weights"] + run["details"]["runner"] <= parts["model_load"] + 0.01
        assert run["heavy"] == [] and run["importers"] == {} and run["codec"] == "pillow"
    assert row.notes["first"]["details"]["compute"] > 0
    assert row.median_ms == pytest.approx(row.notes["second"]["parts"]["total"] * 1000, abs=1)
    assert row.status == ("ok" if row.notes["second"]["parts"]["total"] <= row.notes["bar_s"] else "failed")


@pytest.mark.slow
def test_bench_startup_command_appends_a_row(tmp_path):
    code = main(["bench", "--startup", "--device", "cpu", "--output", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "startup.csv")))
    assert len(rows) == 1 and rows[0]["kind"] == "startup" and rows[0]["provider"] == "cpu"
    notes = json.loads(rows[0]["notes"])
    assert code == (0 if rows[0]["status"] == "ok" else 1)
    assert float(rows[0]["median_ms"]) == pytest.approx(notes["second"]["parts"]["total"] * 1000, rel=1e-3)
