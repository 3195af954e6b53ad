"""`styleforge bench --pipeline --quick` on CPU: every case's three providers measured on data
the bench generates itself, rows in pipeline.csv with the bar ratios, a printed table."""
import csv
import json

import pytest

pytest.importorskip("av")

from styleforge.cli import main  # noqa: E402


@pytest.mark.slow
def test_quick_pipeline_bench_writes_rows_and_table(styles_env, tmp_path, capsys):
    code = main(["bench", "--pipeline", "--quick", "--device", "cpu", "--workers", "2",
                 "--pipeline-cases", "jpeg-1080p,jpeg-mixed,jpeg-mixed-ref,video-1080p",
                 "--output", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    with open(tmp_path / "pipeline.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["op"], r["provider"]) for r in rows} == {
        (case, provider) for case in ("jpeg-1080p", "jpeg-mixed", "jpeg-mixed-ref", "video-1080p")
        for provider in ("pipeline", "engine", "codec")} | {("video-1080p", "codec-styled")}
    assert all(r["status"] == "ok" and float(r["fps"]) > 0 and r["device"] == "cpu" for r in rows)
    pipeline = {r["op"]: json.loads(r["notes"]) for r in rows if r["provider"] == "pipeline"}
    assert all(notes["ratio_vs_slower"] > 0 for notes in pipeline.values())
    assert pipeline["jpeg-mixed"]["ratio_vs_same_size"] > 0
    assert pipeline["video-1080p"]["ratio_vs_styled_codec"] > 0
    assert "jpeg-mixed" in out and "mixed/same-size" in out


def test_unknown_case_is_a_clear_error(styles_env, tmp_path, capsys):
    assert main(["bench", "--pipeline", "--device", "cpu", "--pipeline-cases", "gif-8k",
                 "--output", str(tmp_path)]) == 2
    assert "unknown ['gif-8k']" in capsys.readouterr().out
