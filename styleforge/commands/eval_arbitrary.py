"""`styleforge eval-arbitrary --weights FILE --photos DIR --paintings DIR --metric-vgg PATH`.

Stylizes every photo with every painting at 512 px and prints the table of
`training/arbitrary_report.py` (style ratio, content distance, palette distance, grid score per
pair, per painting, overall, and issue 39's bars); --csv appends the rows, --sheet writes a
contact sheet. Parsing only.
"""
from __future__ import annotations

import argparse

from ..engine.options import PALETTE_MODES, StylizeOptions

_DEFAULTS = StylizeOptions()


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
    p.add_argument("--degrid", action=argparse.BooleanOptionalAction, default=_DEFAULTS.degrid,
                   help="remove the 4-px lattice after each pass (default on)")
    p.add_argument("--palette", choices=PALETTE_MODES, default=_DEFAULTS.palette,
                   help="transport the painting's colours between passes (between), and part of the way "
                        f"after the last (all, default; --palette-strength {_DEFAULTS.palette_strength:g})")
    p.add_argument("--palette-strength", type=float, default=_DEFAULTS.palette_strength,
                   help="with --palette all: how far the colours move after the last pass")
    p.add_argument("--palette-target", type=float, default=_DEFAULTS.palette_target,
                   help="with --palette all: the palette distance that share is raised to reach")
    p.add_argument("--palette-cap", type=float, default=_DEFAULTS.palette_cap,
                   help="with --palette all: the most that share is raised to (≤ strength: fixed)")
    p.add_argument("--save-dir", metavar="DIR", help="also write every output as PNG here")
    p.add_argument("--csv", metavar="FILE",
                   help="append one row per pair (e.g. benchmarks/results/arbitrary_quality.csv)")
    p.add_argument("--label", help="the rows' label (default: weights file name, passes, degrid, palette)")
    p.add_argument("--sheet", metavar="PNG", help="write a contact sheet (needs --save-dir, or uses a temp dir)")


def _files(paths: list[str]) -> list:
    from pathlib import Path

    from ..io.suffixes import SCAN_SUFFIXES
    out = []
    for raw in paths:
        path = Path(raw)
        out += sorted(p for p in path.iterdir() if p.suffix.lower() in SCAN_SUFFIXES) if path.is_dir() else [path]
    return out


def run(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from ..engine.arbitrary import ArbitraryStylizer
    from ..engine.options import StylizeOptions
    from ..training.arbitrary_eval import evaluate
    from ..training.arbitrary_report import append_rows, contact_sheet, table
    engine = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, alpha=args.alpha, passes=args.passes,
                                              device=args.device, precision=args.precision, degrid=args.degrid,
                                              palette=args.palette, palette_strength=args.palette_strength,
                                              palette_target=args.palette_target, palette_cap=args.palette_cap))
    photos, paintings = _files(args.photos), _files(args.paintings)
    with tempfile.TemporaryDirectory() as tmp:
        save_dir = Path(args.save_dir) if args.save_dir else (Path(tmp) if args.sheet else None)
        scores = evaluate(lambda photo, painting: engine.stylize(photo, [(painting, 1.0)]),
                          photos, paintings, args.metric_vgg, str(engine.device), save_dir)
        print(table(scores))
        label = args.label or (f"{Path(args.weights).name} passes={args.passes} degrid={int(args.degrid)} "
                               f"palette={args.palette}:{args.palette_strength:g}:{args.palette_target:g}:"
                               f"{args.palette_cap:g} {engine.dtype}".replace("torch.", ""))
        if args.csv:
            print("rows:", append_rows(args.csv, scores, label, str(engine.device)))
        if args.sheet:
            print("sheet:", contact_sheet(args.sheet, scores, photos, paintings, save_dir))
    return 0
