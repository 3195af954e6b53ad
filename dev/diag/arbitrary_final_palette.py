"""How much of the painting's palette to transport after the arbitrary model's last pass.

`--palette between` moves the colours between the two passes; the second pass re-washes part of
it. This scores, per photo × painting, one engine output (palette between, or none with --between none) with a final
transport at several strengths (0 = between only, 1 = `--palette all`), all four measures of
issue 39, so the strength is chosen on numbers (docs/arbitrary.md). CPU fp32 by default.
Usage: python dev/diag/arbitrary_final_palette.py --weights W --photos DIR --paintings DIR
           --metric-vgg VGG [--every 2] [--strengths 0,0.25,0.5,0.75,1]
"""
import argparse
import statistics
from pathlib import Path

import torch

from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.options import StylizeOptions
from styleforge.models.arbitrary.palette import transport
from styleforge.models.vgg import load_vgg16
from styleforge.training.arbitrary_eval import PairScorer, load_scaled


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--weights", required=True)
    p.add_argument("--photos", required=True)
    p.add_argument("--paintings", required=True)
    p.add_argument("--metric-vgg", required=True)
    p.add_argument("--every", type=int, default=2, help="every Nth photo (a quicker subset)")
    p.add_argument("--strengths", default="0,0.25,0.5,0.75,1")
    p.add_argument("--device", default="cpu")
    p.add_argument("--between", default="between", choices=("none", "between"),
                   help="the engine's transport between the passes (none: the final one alone)")
    args = p.parse_args()
    strengths = [float(s) for s in args.strengths.split(",")]
    engine = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, device=args.device,
                                              precision="fp32", palette=args.between))
    vgg = load_vgg16(args.metric_vgg, args.device)
    photos = sorted(Path(args.photos).iterdir())[::args.every]
    rows = {s: [] for s in strengths}
    for painting in sorted(Path(args.paintings).iterdir()):
        style = load_scaled(painting)
        code = engine.style_code(painting).palette
        for photo in photos:
            x = load_scaled(photo)
            out = engine.stylize(x, [(painting, 1.0)]).float()
            scorer = PairScorer(vgg, x, painting, style)
            for s in strengths:
                final = transport(out.to(code.bases.device), code, s) if s > 0 else out
                rows[s].append((painting.name, *scorer(final.cpu())))
            print(painting.name, photo.name, " ".join(f"{s}:{rows[s][-1][3]:.1f}/{rows[s][-1][1]:.3f}"
                                                      for s in strengths), flush=True)
    print("strength  style  content  palette  grid  worst painting palette")
    for s in strengths:
        r = rows[s]
        per = {}
        for name, *m in r:
            per.setdefault(name, []).append(m[2])
        worst = max(statistics.median(v) for v in per.values())
        print(f"{s:8.2f} {statistics.median(x[1] for x in r):6.3f} {statistics.median(x[2] for x in r):8.3f} "
              f"{statistics.median(x[3] for x in r):8.1f} {statistics.median(x[4] for x in r):5.1f} {worst:8.1f}")
        for name, v in per.items():
            print(f"          {name:40s} palette {statistics.median(v):5.1f}")


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    main()
