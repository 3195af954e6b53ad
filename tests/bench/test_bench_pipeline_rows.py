"""`styleforge bench --pipeline --quick` on CPU: every case's three providers measured on data
the bench generates itself, rows in pipeline.csv with the bar ratios, a printed table."""
import csv
import json

import pytest

pytest.importorskip("av")

from styleforge.cli import main  # noqa: E402

# fps is written with 4 significant digits and each ratio with 3 decimals
CSV_ROUNDING = {"rel": 2e-3, "abs": 2e-3}


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
    fps = {(r["op"], r["provider"]): float(r["fps"]) for r in rows}
    pipeline = {r["op"]: json.loads(r["notes"]) for r in rows if r["provider"] == "pipeline"}
    # each ratio is the one its rows give (rounded to 3 places as written), and the table prints it
    for case, notes in pipeline.items():
        slower = min(fps[(case, "engine")], fps[(case, "codec")])
        assert notes["ratio_vs_slower"] == pytest.approx(fps[(case, "pipeline")] / slower, **CSV_ROUNDING)
        assert f"{notes['ratio_vs_slower']:.2f}" in out
    assert pipeline["jpeg-mixed"]["ratio_vs_same_size"] == pytest.approx(
        fps[("jpeg-mixed", "pipeline")] / fps[("jpeg-mixed-ref", "pipeline")], **CSV_ROUNDING)
    assert pipeline["video-1080p"]["ratio_vs_styled_codec"] == pytest.approx(
        fps[("video-1080p", "pipeline")] / fps[("video-1080p", "codec-styled")], **CSV_ROUNDING)
    assert pipeline["video-1080p"]["codec_styled_fps"] == pytest.approx(fps[("video-1080p", "codec-styled")],
                                                                        abs=0.1, rel=1e-3)
    assert "ratio_vs_same_size" not in pipeline["jpeg-1080p"] and "codec_styled_fps" not in pipeline["jpeg-1080p"]
    assert f"mixed/same-size {pipeline['jpeg-mixed']['ratio_vs_same_size']:.2f}" in out


def test_unknown_case_is_a_clear_error(styles_env, tmp_path, capsys):
    assert main(["bench", "--pipeline", "--device", "cpu", "--pipeline-cases", "gif-8k",
                 "--output", str(tmp_path)]) == 2
    assert "unknown ['gif-8k']" in capsys.readouterr().out
