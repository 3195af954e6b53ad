"""The arbitrary model's quality table: medians per held-out painting and over all pairs of the
latest run of each label, the held-out source's worst painting, and a sentence without rows."""
import csv

from styleforge.bench.tables_quality import LABELS, arbitrary_quality_summary

FIELDS = ["timestamp", "label", "photo", "painting", "style_ratio", "content_dist", "palette_dist",
          "grid_score", "device", "torch", "commit"]


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(dict(zip(FIELDS, r)))


def test_medians_of_the_latest_run_per_label(tmp_path):
    old, new = "2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00"
    held, src = LABELS["paintings"], LABELS["source"]
    write(tmp_path / "arbitrary_quality.csv", [
        (old, held, "a.jpg", "x.jpg", 9, 9, 99, 99, "cpu", "2.13", "abc"),        # an earlier run: left out
        (new, held, "a.jpg", "x.jpg", 0.1, 1.0, 5, 1, "cpu", "2.13", "def"),
        (new, held, "b.jpg", "x.jpg", 0.3, 1.2, 7, 3, "cpu", "2.13", "def"),
        (new, held, "a.jpg", "y.jpg", 0.2, 1.4, 12, 2, "cpu", "2.13", "def"),
        (new, src, "a.jpg", "m1.jpg", 0.2, 1.0, 8, 2, "cpu", "2.13", "def"),
        (new, src, "a.jpg", "m2.jpg", 0.4, 1.2, 14, 4, "cpu", "2.13", "def"),
    ])
    table = arbitrary_quality_summary(tmp_path)
    assert "| x | 0.200 | 1.100 | 6.0 | 2.0 |" in table
    assert "| y | 0.200 | 1.400 | 12.0 | 2.0 |" in table
    assert "| **0.200** | **1.200** | **7.0** | **2.0** |" in table and "median over 3 pairs (2 photos)" in table
    assert "2 paintings × 1 photos (worst painting's palette 14.0) | 0.300 | 1.100 | 11.0 | 3.0 |" in table
    assert "commit def" in table and "99" not in table and "held-out source: commit" not in table
    # the held-out source scored again at a later commit: both commits are named
    later = "2026-03-01T00:00:00+00:00"
    with open(tmp_path / "arbitrary_quality.csv", "a", newline="") as f:
        csv.writer(f).writerow((later, src, "a.jpg", "m1.jpg", 0.2, 1.0, 6, 2, "cpu", "2.13", "ghi"))
    table = arbitrary_quality_summary(tmp_path)
    assert "1 paintings × 1 photos (worst painting's palette 6.0)" in table
    assert "commit def · 2026-02-01; held-out source: commit ghi · 2026-03-01" in table


def test_no_rows_gives_a_sentence(tmp_path):
    assert "No rows yet" in arbitrary_quality_summary(tmp_path)
