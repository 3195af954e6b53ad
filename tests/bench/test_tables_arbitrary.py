"""The arbitrary frame-time table: cells from the rows, ours ÷ compile-sdpa, gaps shown as –."""
import csv

from styleforge.bench.tables_arbitrary import arbitrary_speed_summary

FIELDS = ["model", "provider", "shape", "dtype", "gpu", "torch", "commit", "median_ms", "p20_ms", "p80_ms", "psnr_db"]


def _write(path, rows):
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for model, provider, shape, ms in rows:
            w.writerow({"model": model, "provider": provider, "shape": shape, "dtype": "bf16", "gpu": "GPU X",
                        "torch": "2.0", "commit": "abc1234", "median_ms": ms, "p20_ms": ms, "p80_ms": ms,
                        "psnr_db": "40"})


def test_ratio_and_missing_cells(tmp_path):
    _write(tmp_path / "arbitrary.csv", [
        ("arbitrary-stroke-auto", "eager-fp32", "1x3x1080x1920", "20.0"),
        ("arbitrary-stroke-auto", "compile-sdpa-bf16", "1x3x1080x1920", "4.0"),
        ("arbitrary-stroke-auto", "ours-bf16", "1x3x1080x1920", "5.0"),
        ("arbitrary", "ours-bf16", "1x3x2160x3840", "25.0")])
    table = arbitrary_speed_summary(tmp_path)
    auto = next(line for line in table.splitlines() if line.startswith("| whole frame") and "1080p" in line)
    assert auto == "| whole frame, default stroke scale | 1080p | 20.00 | – | – | 4.00 | 5.00 | 1.25 |"
    native = next(line for line in table.splitlines() if line.startswith("| model alone") and "4K" in line)
    assert native.endswith("| 25.00 | – |")
    assert "4K" not in "".join(line for line in table.splitlines() if line.startswith("| whole frame"))
    assert "GPU X" in table and "abc1234" in table


def test_no_rows_says_how_to_measure(tmp_path):
    assert "python -m styleforge.bench.arbitrary" in arbitrary_speed_summary(tmp_path)
