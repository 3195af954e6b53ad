"""`python -m styleforge.bench.scaling` end to end on two CPU "devices": photos written, one row
per device count, outputs byte-identical across counts."""
import json

import pytest

from styleforge.bench import scaling
from styleforge.bench.results import read_rows


@pytest.mark.slow   # three spawned engine processes: ~15 s on 2 cores
def test_scaling_rows_on_two_cpu_devices(tmp_path):
    code = scaling.main(["--images", "3", "--size", "64x48", "--gpus", "1,all", "--devices", "cpu,cpu",
                         "--workdir", str(tmp_path / "work"), "--output", str(tmp_path / "rows")])
    assert code == 0
    rows = read_rows(tmp_path / "rows", "scaling")
    assert [r["provider"] for r in rows] == ["gpus-1", "gpus-2"]
    assert all(r["status"] == "ok" and json.loads(r["notes"])["bytes_identical"] for r in rows)
    assert len(list((tmp_path / "work" / "out2").glob("*.jpg"))) == 3
