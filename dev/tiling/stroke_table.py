"""Stroke-scale table for docs/tiling.md: style ratio (scored at 512 px) of 512-px, 1080p and 4K
outputs of the same photos, for every built-in style (`--device`, `--precision`).

Not part of the package and not a test: it needs the project's metric tool and the paintings,
which live outside the repository. Photos are resized to each size (Lanczos down, bicubic up).
Usage: python dev/tiling/stroke_table.py --metrics PATH/style_metrics.py --paintings DIR
       [--native] PHOTO... > benchmarks/results/stroke_scale.json
The JSON holds the environment (device, torch, commit), the photos and each style's mean style
ratio per size; `python -m styleforge.bench.tables` makes docs/tiling.md's table from it.
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile

from PIL import Image

import styleforge
from styleforge.bench.env import capture_environment
from styleforge.models.registry import list_styles, load_style


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("photos", nargs="+")
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--paintings", required=True)
    ap.add_argument("--native", action="store_true", help="also 1080p at stroke scale 1")
    ap.add_argument("--sizes", default="512,1080p,4K", help="which of 512, 1080p, 4K")
    ap.add_argument("--styles", default=None, help="comma-separated subset of the built-in styles")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="auto")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("style_metrics", args.metrics)
    sm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sm)
    sizes = {"512": (512, 1.0), "1080p": (1920, None), "4K": (3840, None)}
    sizes = {k: v for k, v in sizes.items() if k in args.sizes.split(",")}
    if args.native:
        sizes["1080p native"] = (1920, 1.0)
    rows = {}
    tmp = tempfile.mkdtemp()
    for info in list_styles():
        if args.styles and info.name not in args.styles.split(","):
            continue
        training = json.loads(load_style(info.name).metadata.get("training", "{}"))
        painting = sm.load(os.path.join(args.paintings, training["style_image"]), 512)
        scores = {k: [] for k in sizes}
        for photo_path in args.photos:
            photo = Image.open(photo_path).convert("RGB")
            for label, (side, stroke) in sizes.items():
                scale = side / max(photo.size)
                resample = Image.LANCZOS if scale < 1 else Image.BICUBIC
                img = photo.resize((round(photo.width * scale), round(photo.height * scale)), resample)
                out = styleforge.stylize(img, info.name, device=args.device, precision=args.precision,
                                          stroke_scale=stroke)
                p_in, p_out = os.path.join(tmp, "in.bmp"), os.path.join(tmp, "out.bmp")
                img.save(p_in)
                out.save(p_out)
                sr, _ = sm.metrics(sm.load(p_in, 512), sm.load(p_out, 512), painting)
                scores[label].append(sr)
        rows[info.name] = {k: sum(v) / len(v) for k, v in scores.items()}
        print(info.name, rows[info.name], file=sys.stderr, flush=True)
    json.dump({"environment": capture_environment(args.device), "precision": args.precision,
               "photos": [os.path.basename(p) for p in args.photos], "style_ratio": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
