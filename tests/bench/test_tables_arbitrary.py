"""The arbitrary frame-time table: cells from the rows, ours ÷ compile-sdpa, gaps shown as –, and
each line one commit's rows."""
import csv

from styleforge.bench.tables_arbitrary import arbitrary_speed_summary

FIELDS = ["model", "provider", "shape", "dtype", "gpu", "torch", "commit", "median_ms", "p20_ms", "p80_ms", "psnr_db"]


def _write(path, rows, commit="abc1234"):
    """Rows of one commit; `commit` may also be a list, one per row."""
    commits = commit if isinstance(commit, list) else [commit] * len(rows)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for (model, provider, shape, ms), c in zip(rows, commits, strict=True):
            w.writerow({"model": model, "provider": provider, "shape": shape, "dtype": "bf16", "gpu": "GPU X",
                        "torch": "2.0", "commit": c, "median_ms": ms, "p20_ms": ms, "p80_ms": ms,
                        "psnr_db": "40"})


def test_ratio_and_missing_cells(tmp_path):
    _write(tmp_path / "arbitrary.csv", [
        ("arbitrary-stroke-auto", "eager-fp32", "1x3x1080x1920", "20.0"),
        ("arbitrary-stroke-auto", "compile-sdpa-bf16", "1x3x1080x1920", "4.0"),
        ("arbitrary-stroke-auto", "ours-bf16", "1x3x1080x1920", "5.0"),
        ("arbitrary", "ours-bf16", "1x3x2160x3840", "25.0")])
    table = arbitrary_speed_summary(tmp_path)
    auto = next(line for line in table.splitlines() if line.startswith("| whole frame") and "1080p" in line)
    assert auto == "| whole frame, default stroke scale | 1080p | abc1234 | 20.00 | – | – | 4.00 | 5.00 | 1.25 |"
    native = next(line for line in table.splitlines() if line.startswith("| model alone") and "4K" in line)
    assert native.endswith("| 25.00 | – |")
    assert "4K" not in "".join(line for line in table.splitlines() if line.startswith("| whole frame"))
    assert "GPU X" in table and "abc1234" in table


def test_no_rows_says_how_to_measure(tmp_path):
    assert "python -m styleforge.bench.arbitrary" in arbitrary_speed_summary(tmp_path)


def test_each_line_is_one_commit_and_newer_ours_only_rows_are_listed_apart(tmp_path):
    frame, model, hd, uhd = "arbitrary-stroke-auto", "arbitrary", "1x3x1080x1920", "1x3x2160x3840"
    rows = [(frame, "compile-sdpa-bf16", hd, "4.0"), (frame, "ours-bf16", hd, "5.0"),          # old: both
            (model, "ours-bf16", uhd, "30.0"),                                                  # old: ours only
            (frame, "eager-fp32", hd, "22.0"), (frame, "ours-bf16", hd, "3.0"),                # new: no baseline
            (model, "ours-bf16", uhd, "25.0")]
    _write(tmp_path / "arbitrary.csv", rows, commit=["old"] * 3 + ["new"] * 3)
    table = arbitrary_speed_summary(tmp_path)
    lines = table.splitlines()
    # The frame line keeps the old commit's pair (5.00 / 4.00), not the new ours over the old baseline.
    assert "| whole frame, default stroke scale | 1080p | old | – | – | – | 4.00 | 5.00 | 1.25 |" in lines
    assert "0.75" not in table
    # With no commit holding both, the line is the newest commit's rows.
    assert "| model alone, native size | 4K | new | – | – | – | – | 25.00 | – |" in lines
    # The newer ours row is listed apart, with the compile rows its commit has (none).
    assert "| whole frame, default stroke scale | 1080p | new | 3.00 | none |" in lines
    assert sum(line.startswith("| model alone") for line in lines) == 1
