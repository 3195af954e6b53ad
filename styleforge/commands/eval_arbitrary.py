"""`styleforge eval-arbitrary --weights FILE --photos DIR --paintings DIR --metric-vgg PATH`.

Stylizes every photo with every painting at 512 px and prints the table of
`training/arbitrary_eval.py` (style ratio, content distance, medians). Parsing only.
"""
from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("eval-arbitrary", help="score the any-painting model on held-out pairs")
    p.add_argument("--weights", required=True, metavar="FILE", help="arbitrary-style weights file")
    p.add_argument("--photos", required=True, nargs="+", metavar="PATH", help="photos or folders")
    p.add_argument("--paintings", required=True, nargs="+", metavar="PATH", help="paintings or folders")
    p.add_argument("--metric-vgg", required=True, metavar="PATH", help="vgg16_relu4_3.fp16.pth (the metric network)")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--passes", type=int, default=2, help="times the model is applied (default 2)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--precision", choices=("auto", "fp32", "fp16", "bf16"), default="auto")
    p.add_argument("--save-dir", metavar="DIR", help="also write every output as PNG here")


def _files(paths: list[str]) -> list:
    from pathlib import Path

    from ..io.image import SCAN_SUFFIXES
    out = []
    for raw in paths:
        path = Path(raw)
        out += sorted(p for p in path.iterdir() if p.suffix.lower() in SCAN_SUFFIXES) if path.is_dir() else [path]
    return out


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..engine.arbitrary import ArbitraryStylizer
    from ..engine.options import StylizeOptions
    from ..training.arbitrary_eval import evaluate, table
    engine = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, alpha=args.alpha, passes=args.passes,
                                              device=args.device, precision=args.precision))
    scores = evaluate(lambda photo, painting: engine.stylize(photo, [(painting, 1.0)]),
                      _files(args.photos), _files(args.paintings), args.metric_vgg,
                      str(engine.device), Path(args.save_dir) if args.save_dir else None)
    print(table(scores))
    return 0
