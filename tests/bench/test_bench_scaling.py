"""`python -m styleforge.bench.scaling` end to end on two CPU "devices": photos written, one row
per device count and one for the one-process loop, outputs byte-identical across them all, and
each row's timeline (when 10/50/90/100 % of the outputs arrived; per worker, go, first and last
record) consistent with its rate and its shares."""
import json

import pytest

from styleforge.bench import scaling
from styleforge.bench.results import read_rows


@pytest.mark.slow   # three spawned engine processes: ~20 s on 2 cores
def test_scaling_rows_on_two_cpu_devices(tmp_path, capsys):
    code = scaling.main(["--images", "3", "--size", "64x48", "--gpus", "1,all", "--devices", "cpu,cpu",
                         "--workdir", str(tmp_path / "work"), "--output", str(tmp_path / "rows")])
    assert code == 0
    rows = read_rows(tmp_path / "rows", "scaling")
    assert [r["provider"] for r in rows] == ["gpus-1", "gpus-2", "one-process"]
    notes = [json.loads(r["notes"]) for r in rows]
    assert all(r["status"] == "ok" and n["bytes_identical"] for r, n in zip(rows, notes))
    assert all(float(r["fps"]) > 0 and n["warm_s"] > 0 for r, n in zip(rows, notes))
    assert [n["one_process"] for n in notes] == [False, False, True]
    for out in ("out1", "out2", "out-one"):
        assert len(list((tmp_path / "work" / out).glob("*.jpg"))) == 3
    for row, n in zip(rows, notes):
        arrived = n["arrived_s"]
        assert sorted(arrived, key=int) == ["10", "50", "90", "100"]
        assert 0 < arrived["10"] <= arrived["50"] <= arrived["90"] <= arrived["100"]
        # the rate counts from the go to the last arrival
        assert arrived["100"] == pytest.approx(int(row["reps"]) / float(row["fps"]), rel=0.02)
    assert notes[2]["workers"] is None                       # one process: no workers
    for row, n in zip(rows[:2], notes[:2]):
        workers = n["workers"]
        assert len(workers) == n["devices"]
        started = [w for w in workers.values() if w["first_s"] is not None]
        assert sum(int(share.split()[-1]) > 0 for share in n["shares"].split(", ")) == len(started)
        for w in workers.values():
            assert w["go_s"] is not None and w["go_s"] >= 0 and w["lag_max_s"] >= 0
        for w in started:
            assert w["go_s"] <= w["first_s"] <= w["last_s"] <= n["arrived_s"]["100"]
        assert max(w["last_s"] for w in started) == pytest.approx(n["arrived_s"]["100"], abs=0.05)
    printed = capsys.readouterr().out
    assert printed.count("arrived 10/50/90/100 %") == 3 and "cpu#1 go" in printed
