"""Reports of the arbitrary model's held-out quality: the table, measured rows and a contact sheet.

table()        every pair's four measures (style ratio, content distance, palette distance, grid
               score), each painting's medians, the medians over all pairs, and issue 39's bars
               (medians ≤ 0.20 / 1.5 / 10 / 10; no painting's median palette distance above 15).
append_rows()  one CSV row per pair (benchmarks/results/arbitrary_quality.csv): the label of the
               run (weights, passes, degrid, palette), the measures, the machine and commit, so
               README figures are drawn from rows, not typed.
contact_sheet() one PNG a person can judge: a header row of the photos, then per painting its
               thumbnail and every output, each cell captioned with its palette and grid scores.
Not the scoring itself (`arbitrary_eval.py`).
"""
from __future__ import annotations

import csv
import datetime
import os
import platform
import statistics
import subprocess
from pathlib import Path

from PIL import Image, ImageDraw

from .arbitrary_eval import PairScore

BARS = {"style_ratio": 0.20, "content_dist": 1.5, "palette_dist": 10.0, "grid_score": 10.0}
PAINTING_PALETTE_BAR = 15.0
CELL = 224
FIELDS = ("timestamp", "label", "photo", "painting", *BARS, "device", "torch", "commit")


def medians(scores: list[PairScore]) -> dict[str, float]:
    return {m: statistics.median(getattr(s, m) for s in scores) for m in BARS}


def per_painting(scores: list[PairScore]) -> dict[str, dict[str, float]]:
    names = list(dict.fromkeys(s.painting for s in scores))
    return {n: medians([s for s in scores if s.painting == n]) for n in names}


def bars_met(scores: list[PairScore]) -> dict[str, bool]:
    overall = medians(scores)
    met = {m: overall[m] <= bar for m, bar in BARS.items()}
    met["every painting's palette_dist"] = all(v["palette_dist"] <= PAINTING_PALETTE_BAR
                                               for v in per_painting(scores).values())
    return met


def table(scores: list[PairScore]) -> str:
    head = f"{'photo':<26} {'painting':<34} {'style':>6} {'content':>7} {'palette':>7} {'grid':>7}"
    row = lambda a, b, v: f"{a:<26} {b:<34} {v['style_ratio']:>6.3f} {v['content_dist']:>7.3f} " \
                          f"{v['palette_dist']:>7.1f} {v['grid_score']:>7.1f}"  # noqa: E731
    lines = [head] + [row(s.photo, s.painting, {m: getattr(s, m) for m in BARS}) for s in scores]
    lines += ["", "median per painting:"] + [row("", n, v) for n, v in per_painting(scores).items()]
    lines += [row(f"median over {len(scores)} pairs", "", medians(scores)), "",
              "bars (issue 39): " + ", ".join(f"{m} {'met' if ok else 'NOT met'}"
                                              for m, ok in bars_met(scores).items())]
    return "\n".join(lines)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        return ""


def append_rows(path: str | os.PathLike, scores: list[PairScore], label: str, device: str) -> Path:
    import torch
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file()
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    machine = torch.cuda.get_device_name() if device.startswith("cuda") else f"cpu ({platform.machine()})"
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        for s in scores:
            writer.writerow({"timestamp": stamp, "label": label, "photo": s.photo, "painting": s.painting,
                             **{m: f"{getattr(s, m):.4f}" for m in BARS}, "device": machine,
                             "torch": torch.__version__, "commit": _commit()})
    return path


def _tile(image: Image.Image, caption: str | None = None) -> Image.Image:
    image = image.convert("RGB")
    image.thumbnail((CELL, CELL - (14 if caption else 0)), Image.Resampling.LANCZOS)
    tile = Image.new("RGB", (CELL, CELL), "white")
    tile.paste(image, ((CELL - image.width) // 2, 0))
    if caption:
        ImageDraw.Draw(tile).text((4, CELL - 13), caption, fill=(0, 0, 0))
    return tile


def contact_sheet(path: str | os.PathLike, scores: list[PairScore], photos: list[Path], paintings: list[Path],
                  outputs: Path) -> Path:
    """outputs: the folder `evaluate(save_dir=...)` wrote (`<photo>__<painting>.png`)."""
    by_pair = {(Path(s.photo).stem, Path(s.painting).stem): s for s in scores}
    sheet = Image.new("RGB", (CELL * (len(photos) + 1), CELL * (len(paintings) + 1)), "white")
    for col, photo in enumerate(photos, start=1):
        with Image.open(photo) as im:
            sheet.paste(_tile(im, Path(photo).stem[:30]), (CELL * col, 0))
    for row, painting in enumerate(paintings, start=1):
        with Image.open(painting) as im:
            sheet.paste(_tile(im, Path(painting).stem[:30]), (0, CELL * row))
        for col, photo in enumerate(photos, start=1):
            key = (Path(photo).stem, Path(painting).stem)
            out = outputs / f"{key[0]}__{key[1]}.png"
            if out.is_file() and key in by_pair:
                s = by_pair[key]
                with Image.open(out) as im:
                    sheet.paste(_tile(im, f"s {s.style_ratio:.2f} p {s.palette_dist:.0f} g {s.grid_score:.0f}"),
                                (CELL * col, CELL * row))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)
    return path
