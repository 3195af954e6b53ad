"""Choose the constants of the last transport's share rule (`models/arbitrary/palette_share.py`).

Per photo × painting: the engine's output before its final transport (palette between, degrid,
two passes: the last `_clean` call's input), then the final transport at the fixed share and at
the share each candidate rule (target, cap) picks, degrid, and issue 39's four measures
(`PairScorer`). Prints per rule the medians, the worst painting's median palette distance and
the worst painting's median style ratio; and the engine's own measure against PairScorer's.
Run it on paintings that are NOT in the held-out evaluation (a validation subset of the
training sources), never on the mate source or the four famous held-out paintings.
Usage: python dev/diag/arbitrary_palette_rule.py --photos P… --paintings Q… --metric-vgg VGG
           [--rules 10:0.5,12:0.6] [--weights W]
"""
import argparse
import statistics
from pathlib import Path

import torch

from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.degrid import degrid
from styleforge.engine.options import StylizeOptions
from styleforge.models.arbitrary.palette import _moved
from styleforge.models.arbitrary.palette_share import adaptive_share, palette_distance
from styleforge.models.vgg import load_vgg16
from styleforge.training.arbitrary_eval import PairScorer, load_scaled

BASE = 0.25


def files(paths):
    out = []
    for raw in paths:
        p = Path(raw)
        out += sorted(q for q in p.iterdir() if q.suffix.lower() in (".jpg", ".png")) if p.is_dir() else [p]
    return out


def medians(rows):
    per = {}
    for name, *m in rows:
        per.setdefault(name, []).append(m)
    worst_pal = max(statistics.median(m[2] for m in v) for v in per.values())
    worst_style = max(statistics.median(m[0] for m in v) for v in per.values())
    return [statistics.median(r[1 + i] for r in rows) for i in range(4)] + [worst_pal, worst_style]


@torch.inference_mode()
def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--weights")
    p.add_argument("--photos", nargs="+", required=True)
    p.add_argument("--paintings", nargs="+", required=True)
    p.add_argument("--metric-vgg", required=True)
    p.add_argument("--rules", default="8:0.5,10:0.5,10:0.75,12:0.5,12:0.75,12:1")
    args = p.parse_args()
    rules = [tuple(float(v) for v in r.split(":")) for r in args.rules.split(",")]
    engine = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, device="cpu", precision="fp32",
                                              palette="between"))
    seen = {}
    clean = engine._clean
    engine._clean = lambda out: (seen.__setitem__("last", out), clean(out))[1]
    vgg = load_vgg16(args.metric_vgg, "cpu")
    names = ["fixed"] + [f"{t:g}:{c:g}" for t, c in rules]
    rows = {n: [] for n in names}
    gaps = []
    for painting in files(args.paintings):
        style = load_scaled(painting)
        code = engine.style_code(painting).palette
        for photo in files(args.photos):
            x = load_scaled(photo)
            engine.stylize(x, [(painting, 1.0)])
            raw = seen["last"]
            start, moved = _moved(raw, code)
            full = moved.view(raw.shape).clamp(0, 255)
            d0, d1 = palette_distance(raw, code.measure), palette_distance(full, code.measure)
            scorer = PairScorer(vgg, x, painting, style)
            shares = [torch.tensor([BASE])] + [adaptive_share(d0, d1, BASE, t, c) for t, c in rules]
            line, scored = [], {}
            for name, share in zip(names, shares):
                key = round(float(share[0]), 6)
                if key not in scored:    # rules that pick the same share give the same image
                    out = degrid(torch.lerp(start, moved, share.view(-1, 1, 1)).view(raw.shape).clamp(0, 255))
                    scored[key] = scorer(out.clamp(0, 255))
                    if name == "fixed":
                        gaps.append(float(palette_distance(out.clamp(0, 255).round(), code.measure)[0])
                                    - scored[key][2])
                rows[name].append((painting.name, *scored[key]))
                line.append(f"{name}@{key:.2f}:" + "/".join(f"{v:.3g}" for v in scored[key]))
            print(painting.name, photo.name, f"d0 {float(d0[0]):.1f} d1 {float(d1[0]):.1f}", " ".join(line),
                  flush=True)
        summarise(names, rows, gaps)


def summarise(names, rows, gaps) -> None:
    print(f"engine measure − PairScorer's at the fixed share: median {statistics.median(gaps):+.2f}, "
          f"max |gap| {max(abs(g) for g in gaps):.2f} over {len(gaps)} pairs")
    print("rule (target:cap)  style  content  palette  grid  worst-painting-palette  worst-painting-style")
    for name in names:
        m = medians(rows[name])
        print(f"{name:>17} {m[0]:6.3f} {m[1]:8.3f} {m[2]:8.1f} {m[3]:5.1f} {m[4]:23.1f} {m[5]:21.3f}")


if __name__ == "__main__":
    main()
