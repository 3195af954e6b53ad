"""The arbitrary model's quality table (issue 39's four measures) from `arbitrary_quality.csv`.

`styleforge eval-arbitrary --csv` appends one row per photo × painting, labelled. The table takes
the latest run (timestamp) of each label in `LABELS`: per held-out painting and over all pairs,
the median Gram style ratio, content distance, palette distance and grid score, and for the
held-out source the medians and its worst painting's median palette distance. Kept apart from
`tables.py` (one formatter per table there) because these rows are quality, not time.
"""
from __future__ import annotations

import csv
import statistics
from pathlib import Path

MEASURES = ("style_ratio", "content_dist", "palette_dist", "grid_score")
BARS = "≤ 0.20 | ≤ 1.5 | ≤ 10 | ≤ 10"
LABELS = {"paintings": "shipped defaults, held-out paintings", "source": "shipped defaults, held-out source"}


def _latest(rows: list[dict], label: str) -> list[dict]:
    mine = [r for r in rows if r["label"] == label]
    last = max((r["timestamp"] for r in mine), default=None)
    return [r for r in mine if r["timestamp"] == last]


def _medians(rows: list[dict]) -> list[float]:
    return [statistics.median(float(r[m]) for r in rows) for m in MEASURES]


def _line(name: str, values: list[float], bold: bool = False) -> str:
    cells = [f"{values[0]:.3f}", f"{values[1]:.3f}", f"{values[2]:.1f}", f"{values[3]:.1f}"]
    if bold:
        cells = [f"**{c}**" for c in cells]
    return f"| {name} | " + " | ".join(cells) + " |"


def arbitrary_quality_summary(results: Path) -> str:
    path = results / "arbitrary_quality.csv"
    rows = list(csv.DictReader(path.open())) if path.is_file() else []
    held, source = _latest(rows, LABELS["paintings"]), _latest(rows, LABELS["source"])
    if not held:
        return (f"_No rows yet: `styleforge eval-arbitrary … --csv {path.name} --label "
                f"\"{LABELS['paintings']}\"` writes them._\n")
    out = ["| held-out painting | style ratio | content distance | palette distance | grid score |",
           "|---|---:|---:|---:|---:|"]
    for painting in sorted({r["painting"] for r in held}):
        out.append(_line(Path(painting).stem, _medians([r for r in held if r["painting"] == painting])))
    photos = len({r["photo"] for r in held})
    out.append(_line(f"median over {len(held)} pairs ({photos} photos)", _medians(held), bold=True))
    if source:
        per = {p: statistics.median(float(r["palette_dist"]) for r in source if r["painting"] == p)
               for p in {r["painting"] for r in source}}
        paintings, photos = len(per), len({r["photo"] for r in source})
        out.append(_line(f"held-out source: {paintings} paintings × {photos} photos (worst painting's "
                         f"palette {max(per.values()):.1f})", _medians(source)))
    out.append(f"| bars (issue 39) | {BARS} |")
    first = held[0]
    # The two labels are separate runs: when they were scored at different commits, both are named.
    later = source[0] if source and source[0]["commit"] != first["commit"] else None
    also = f"; held-out source: commit {later['commit']} · {later['timestamp'][:10]}" if later else ""
    out.append("")
    out.append(f"_Measured: {first['device']} · torch {first['torch']} · commit {first['commit']} · "
               f"{first['timestamp'][:10]}{also} · `styleforge eval-arbitrary`, defaults of each commit (two "
               "passes, degrid, palette all), fp32 reference path._")
    return "\n".join(out) + "\n"
