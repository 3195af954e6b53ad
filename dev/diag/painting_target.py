"""Which painting a style's outputs match: the file the yardstick reads, or the one training saw.

    python dev/diag/painting_target.py --metrics .data/tools/style_metrics.py --painting .data/styles/mosaic.jpg \
        --outputs out/eval/files --style mosaic --style-size 512 [--json out/t.json]

The yardstick (`style_metrics.py`) only shrinks a painting to 512 px; training resizes it to
`style_size` up or down (`training.data.load_style_image`, bicubic). For a painting smaller than
style_size the two differ: training sees an enlarged, smoother copy. This scores the outputs
`dev/eval_styles.py` wrote (PHOTO_STYLE_png.png for the asset photos and amber.jpg, when present)
against several versions of the painting, with the yardstick's own style ratio, median over the
photos: the file as the yardstick reads it; the painting as training loads it; that copy brought
back to the file's size; and the file blurred by 0.5 and 1 px. If the outputs score far better
against training's copy than against the file, the recipe learns a target it is not scored on.
A CPU measurement for docs/training.md; not imported by the package.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from json_out import write_json  # noqa: E402
from PIL import Image, ImageFilter  # noqa: E402

from styleforge.training.data import load_style_image  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eval_styles import load_metrics  # noqa: E402

SIDE = 512      # the yardstick's longest side


def versions(painting: Path, style_size: int | None) -> dict[str, Image.Image]:
    """The painting as each party sees it (RGB, before the yardstick's own shrink to 512)."""
    native = Image.open(painting).convert("RGB")
    trained = load_style_image(painting, style_size)[0].permute(1, 2, 0).clamp(0, 255).byte().numpy()
    trained = Image.fromarray(trained)
    return {"file (scored)": native, f"as trained (style_size {style_size})": trained,
            "as trained, back to the file's size": trained.resize(native.size, Image.LANCZOS),
            "file, blur 0.5 px": native.filter(ImageFilter.GaussianBlur(0.5)),
            "file, blur 1 px": native.filter(ImageFilter.GaussianBlur(1.0))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--metrics", required=True, help="shared/tools/style_metrics.py or a copy")
    p.add_argument("--painting", required=True, type=Path)
    p.add_argument("--outputs", required=True, type=Path, help="dev/eval_styles.py's files/ folder")
    p.add_argument("--style", required=True, help="the name in the output files (PHOTO_STYLE_png.png)")
    p.add_argument("--style-size", type=int, default=512, help="the recipe's style_size (0: its own size)")
    p.add_argument("--photo", action="append", default=[], help="more photos, as given to eval_styles")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    sm = load_metrics(Path(args.metrics))
    pairs = []
    for photo in [*default_photos(), *map(Path, args.photo)]:
        out = args.outputs / f"{Path(photo).stem}_{args.style}_png.png"
        if out.is_file():
            pairs.append((Path(photo).stem, sm.load(str(photo), SIDE), sm.load(str(out), SIDE)))
    if not pairs:
        print(f"no {args.outputs}/PHOTO_{args.style}_png.png files", file=sys.stderr)
        return 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, image in versions(args.painting, args.style_size or None).items():
            path = Path(tmp) / "painting.png"      # lossless, so the version is what is scored
            image.save(path)
            target = sm.load(str(path), SIDE)
            ratios = {}
            for name, photo, out in pairs:
                if out.shape != photo.shape:
                    out = F.interpolate(out, size=photo.shape[-2:], mode="bilinear")
                ratios[name] = round(float(sm.metrics(photo, out, target)[0]), 4)
            rows.append({"painting": label, "size": list(image.size), "style_ratio": ratios,
                         "median": round(statistics.median(ratios.values()), 4)})
            print(f"{label:40s} {image.size[0]}x{image.size[1]}  median {rows[-1]['median']:.3f}  "
                  + "  ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    if args.json:
        write_json(args.json, {"style": args.style, "painting": args.painting.name, "torch": torch.__version__,
                               "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
