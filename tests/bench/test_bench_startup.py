"""`bench --startup`: the parts of a run partition its total (the arithmetic, and on the CPU the
floors and cold one-photo runs), floors and timed runs alternate, the bar compares medians so one
slow spawn does not decide, every sample is in the row, and no heavy module is imported."""
from __future__ import annotations

import csv
import json

import pytest

from styleforge.bench.startup import BAR_S, PARTS, median_parts, partition, run_startup, schedule, verdict
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


def test_floors_and_timed_runs_alternate_round_by_round():
    assert schedule(1) == ["floor", "stylize"]
    assert schedule(4) == ["floor", "stylize", "stylize", "floor", "floor", "stylize", "stylize", "floor"]


def test_the_bar_takes_medians_so_one_slow_spawn_does_not_decide():
    # A device call's spread (issue 38): one floor at 6.75 s and one run at 6.78 s, the rest typical.
    floor, total, within = verdict([4.40, 6.75, 4.43], [4.84, 6.78, 5.10])
    assert (floor, total, within) == (4.43, 5.10, True)
    assert verdict([4.40, 4.45, 4.43], [6.10, 6.05, 5.90]) == (4.43, 6.05, False)   # a real excess still fails
    assert verdict([4.0], [5.5])[2] and not verdict([4.0], [5.51])[2]              # the bar is floor + 1.5 s


def test_median_parts_are_per_part_over_the_runs():
    runs = [{"parts": {"imports": 3.4, "exit": 0.2, "total": 4.8}, "details": {"runner": 0.23, "plan": 0.1}},
            {"parts": {"imports": 5.2, "exit": 0.3, "total": 6.8}, "details": {"runner": 0.30}},
            {"parts": {"imports": 3.5, "exit": 0.1, "total": 5.0}, "details": {"runner": 0.25, "plan": 0.2}}]
    medians = median_parts(runs)
    assert medians["parts"] == {"imports": 3.5, "exit": 0.2, "total": 5.0}
    assert medians["details"] == {"runner": 0.25}     # `plan` is not in every run


@pytest.mark.slow   # five fresh interpreters importing torch
def test_startup_row_has_every_sample_and_the_parts_of_each_run(tmp_path):
    messages = []
    row = run_startup("cpu", size=(96, 64), log=messages.append, runs=2)
    notes = row.notes
    assert row.kind == "startup" and row.reps == 2
    assert notes["order"] == ["floor", "stylize", "stylize", "floor"]
    assert len(notes["floor_samples"]) == len(notes["floor_exit_samples"]) == len(notes["runs"]) == 2
    assert all(f > 0 for f in notes["floor_samples"])
    assert notes["floor_s"] == pytest.approx(sum(notes["floor_samples"]) / 2, abs=1e-3)   # median of two
    assert notes["totals"] == [run["parts"]["total"] for run in notes["runs"]]
    assert row.median_ms == pytest.approx(sum(notes["totals"]) / 2 * 1000, abs=1)
    assert notes["bar_s"] == pytest.approx(notes["floor_s"] + BAR_S, abs=1e-3)
    assert row.status == ("ok" if row.median_ms / 1000 <= notes["bar_s"] + 1e-3 else "failed")
    for run in (notes["first"], *notes["runs"]):
        parts = run["parts"]
        assert list(parts) == [*PARTS, "total"]
        assert sum(parts[k] for k in PARTS) == pytest.approx(parts["total"], abs=0.01)
        for timed in ("imports", "model_load", "decode", "stylize", "write", "exit"):
            assert parts[timed] > 0, timed
        assert parts["other"] < 0.5 * parts["total"]   # the timed calls cover the run
        assert {"weights", "build_model", "runner", "plan", "exit_atexit"} <= set(run["details"])
        assert run["details"]["weights"] + run["details"]["runner"] <= parts["model_load"] + 0.01
        assert run["heavy"] == [] and run["importers"] == {} and run["codec"] == "pillow"
    assert notes["first"]["details"]["compute"] > 0
    assert "compute" not in notes["runs"][0]["details"]     # the timed runs end as a user's does
    imports = sorted(run["parts"]["imports"] for run in notes["runs"])
    assert notes["median"]["parts"]["imports"] == pytest.approx(sum(imports) / 2, abs=2e-3)
    assert sum(m.startswith("timed run") for m in messages) == 2
    assert any(m.startswith("medians of 2") for m in messages)


@pytest.mark.slow
def test_bench_startup_command_appends_a_row(tmp_path):
    code = main(["bench", "--startup", "--startup-runs", "1", "--device", "cpu", "--output", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "startup.csv")))
    assert len(rows) == 1 and rows[0]["kind"] == "startup" and rows[0]["provider"] == "cpu"
    notes = json.loads(rows[0]["notes"])
    assert code == (0 if rows[0]["status"] == "ok" else 1)
    assert float(rows[0]["median_ms"]) == pytest.approx(notes["runs"][0]["parts"]["total"] * 1000, rel=1e-3)
    assert notes["order"] == ["floor", "stylize"] and len(notes["floor_samples"]) == 1
