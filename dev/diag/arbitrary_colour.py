"""Cheap inference-side variants of the arbitrary model, scored with all four measures (CPU, fp32).

Photos (shipped assets + amber.jpg) × the four held-out paintings, at --size px on the longer
side; variants: passes 1/2, sliced colour transport (`models/arbitrary/palette.py`) before, between
or after the passes, partial transport, and the lattice filter (`engine/degrid.py`) after each
pass. Prints the median of each measure per variant and the per-painting median palette_dist,
and writes the rows to --csv. A development probe: not imported by the package.
Usage: PYTHONPATH=. python dev/diag/arbitrary_colour.py [--size 384] [--weights FILE]
"""
from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import torch

from styleforge.engine.paintings import painting_image, painting_tensor
from styleforge.models.arbitrary import load_arbitrary
from styleforge.models.arbitrary.palette import encode_palette, transport
from styleforge.models.vgg import load_vgg16
from styleforge.training.arbitrary_eval import PairScorer, load_scaled

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
PAINTINGS = ("the_scream", "composition_vii", "the_shipwreck_of_the_minotaur", "candy")


def variants(model, code, pal, x, degrid):
    one = lambda t: model.stylize(t, [(code, 1.0)])  # noqa: E731
    p1 = one(x)
    p2 = one(p1)
    p1t = transport(p1, pal)
    out = {"1 pass": p1, "2 passes": p2, "1 pass + T": p1t, "2 passes + T": transport(p2, pal),
           "2 passes + T 0.7": transport(p2, pal, 0.7), "1 pass + T + pass 2": one(p1t)}
    out["1 pass + T + pass 2 + T"] = transport(out["1 pass + T + pass 2"], pal)
    if degrid is not None:
        out["2 passes, degrid"] = degrid(p2)
        out["2 passes + T, degrid"] = degrid(out["2 passes + T"])
        out["1 pass + T + pass 2 + T, degrid"] = degrid(out["1 pass + T + pass 2 + T"])
    return out


@torch.no_grad()
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights")
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("--csv", default="/tmp/arbitrary_colour.csv")
    ap.add_argument("--photos", nargs="*", default=[*sorted((ROOT / "styleforge/assets").glob("*.jpg")),
                                                     SHARED / "amber.jpg"])
    args = ap.parse_args()
    try:
        from styleforge.engine.degrid import degrid
    except ImportError:
        degrid = None
    torch.set_num_threads(2)
    model, _ = load_arbitrary(args.weights)
    vgg = load_vgg16(SHARED / "vgg16_relu4_3.fp16.pth", "cpu")
    rows = []
    for name in PAINTINGS:
        path = SHARED / "styles" / f"{name}.jpg"
        image = painting_tensor(painting_image(path), 512)
        code, pal = model.encode_style(image), encode_palette(image)
        style = load_scaled(path)
        for photo in args.photos:
            x = load_scaled(photo, args.size)
            scorer = PairScorer(vgg, x, path, style)
            for variant, out in variants(model, code, pal, x, degrid).items():
                scores = scorer(out)
                rows.append({"variant": variant, "photo": Path(photo).name, "painting": name,
                             **dict(zip(("style_ratio", "content_dist", "palette_dist", "grid_score"), scores))})
                print("  ", variant, " ".join(f"{v:.3f}" for v in scores), flush=True)
            print(f"{name} {Path(photo).name} done", flush=True)
    with open(args.csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    names = list(dict.fromkeys(r["variant"] for r in rows))
    print(f"{'variant':<42} {'style':>6} {'content':>7} {'palette':>7} {'grid':>6}   palette per painting")
    for v in names:
        sel = [r for r in rows if r["variant"] == v]
        med = {k: statistics.median(r[k] for r in sel) for k in ("style_ratio", "content_dist", "palette_dist",
                                                                  "grid_score")}
        per = "  ".join(f"{statistics.median(r['palette_dist'] for r in sel if r['painting'] == p):.1f}"
                        for p in PAINTINGS)
        print(f"{v:<42} {med['style_ratio']:6.3f} {med['content_dist']:7.3f} {med['palette_dist']:7.1f} "
              f"{med['grid_score']:6.1f}   {per}")


if __name__ == "__main__":
    main()
