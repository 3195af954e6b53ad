"""`styleforge bench --pipeline --quick` on CPU: each case's providers measured on data the bench
generates itself, every row's outputs checked, the median of N runs with N in the row; and the
checks fail on outputs that are missing, of the wrong size, or not the engine's picture."""
import csv
import json

import numpy as np
import pytest

pytest.importorskip("av")

from styleforge.bench.pipeline_floor import check_images, jpeg_floor  # noqa: E402
from styleforge.cli import main  # noqa: E402

# fps is written with 4 significant digits and each ratio with 3 decimals
CSV_ROUNDING = {"rel": 2e-3, "abs": 2e-3}


@pytest.mark.slow
def test_quick_pipeline_bench_writes_checked_rows_and_table(styles_env, tmp_path, capsys):
    code = main(["bench", "--pipeline", "--quick", "--device", "cpu", "--workers", "2", "--pipeline-runs", "2",
                 "--pipeline-cases", "jpeg-1080p,jpeg-mixed,jpeg-mixed-ref,video-1080p",
                 "--output", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    with open(tmp_path / "pipeline.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["op"], r["provider"]) for r in rows} == {
        (case, provider) for case in ("jpeg-1080p", "jpeg-mixed", "jpeg-mixed-ref", "video-1080p")
        for provider in ("pipeline", "engine", "floor")} | {("video-1080p", "floor-styled")}
    assert all(r["status"] == "ok" and r["device"] == "cpu" for r in rows)
    notes = {(r["op"], r["provider"]): json.loads(r["notes"]) for r in rows}
    for (case, provider), n in notes.items():
        row = next(r for r in rows if (r["op"], r["provider"]) == (case, provider))
        assert n["runs"] == 2 and len(n["seconds"]) == 2
        assert float(row["fps"]) == pytest.approx(int(row["reps"]) / float(np.median(n["seconds"])), rel=2e-2)
        assert n["check"]["count"] == int(row["reps"])
        if provider != "engine":
            assert n["check"]["sampled"] >= 1 and n["check"]["min_psnr_db"] >= n["check"]["psnr_bar_db"]
    for case in ("jpeg-1080p", "video-1080p"):
        pipe = notes[(case, "pipeline")]
        slower = min(float(r["fps"]) for r in rows if r["op"] == case and r["provider"] in ("engine", "floor"))
        got = next(float(r["fps"]) for r in rows if (r["op"], r["provider"]) == (case, "pipeline"))
        assert pipe["ratio_vs_slower"] == pytest.approx(got / slower, rel=1e-2)
    assert "jpeg-mixed" in out and "mixed/same-size" in out


def _photos(folder, sizes):
    from PIL import Image
    folder.mkdir()
    rng = np.random.default_rng(0)
    paths = []
    for i, (w, h) in enumerate(sizes):
        small = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
        path = folder / f"{i}.jpg"
        Image.fromarray(small).resize((w, h), Image.BICUBIC).save(path, quality=95)
        paths.append(path)
    return paths


def test_output_checks_fail_on_missing_resized_or_wrong_pictures(tmp_path):
    from PIL import Image
    files = _photos(tmp_path / "in", [(64, 48), (48, 64), (40, 40)])
    jpeg_floor(files, tmp_path / "out", quality=95, workers=2)
    same = lambda pixels: pixels  # noqa: E731
    good = check_images(files, tmp_path / "out", same, 30.0)
    assert good.ok and good.count == 3 and len(good.psnr_db) == 3
    inverted = check_images(files, tmp_path / "out", lambda p: 255 - p, 30.0)   # not the expected picture
    assert not inverted.ok and "PSNR" in inverted.problem()
    Image.open(files[1]).resize((24, 32)).save(tmp_path / "out" / files[1].name)
    resized = check_images(files, tmp_path / "out", same, 30.0)
    assert not resized.ok and "wrong size" in resized.problem()
    (tmp_path / "out" / files[2].name).unlink()
    missing = check_images(files, tmp_path / "out", same, 30.0)
    assert not missing.ok and missing.problem() == "2 outputs, expected 3"


def test_unknown_case_is_a_clear_error(styles_env, tmp_path, capsys):
    assert main(["bench", "--pipeline", "--device", "cpu", "--pipeline-cases", "gif-8k",
                 "--output", str(tmp_path)]) == 2
    assert "unknown ['gif-8k']" in capsys.readouterr().out
