"""`python -m styleforge.bench.scaling` end to end on two CPU "devices": photos written, one row
per device count and one for the one-process loop, outputs byte-identical across them all."""
import json

import pytest

from styleforge.bench import scaling
from styleforge.bench.results import read_rows


@pytest.mark.slow   # three spawned engine processes: ~20 s on 2 cores
def test_scaling_rows_on_two_cpu_devices(tmp_path):
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
