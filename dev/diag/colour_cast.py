"""Is a style's tint its painting's, or a cast the network adds? CIELAB means per style.

    python dev/diag/colour_cast.py --paintings .data/styles [--styles shipwreck udnie] [--json out/c.json]

Each built-in style (styleforge/styles) stylizes the asset photos and the checkout's
.data/amber.jpg, when present, at 512 px on the CPU (fp32, the library's `Stylizer`). Per output, in CIELAB
(OpenCV, D65): the mean a*b* and the share of clearly green pixels (a* < −8, chroma > 10);
the same for the photo and for the style's painting (as the yardstick reads it, ≤ 512 px).
Reported per style, medians over the photos: the output's mean a*b* distance to its painting's
and to its photo's, and the green shares. A tint that sits nearer the painting's mean than the
photo's, with a green share no higher than the painting's, is the painting's palette; one far
from both is a cast. A CPU measurement for docs/training.md; not imported by the package.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from json_out import write_json  # noqa: E402
from PIL import Image  # noqa: E402

from styleforge.engine.options import StylizeOptions  # noqa: E402
from styleforge.engine.pipeline import Stylizer  # noqa: E402
from styleforge.models.checkpoint import load_checkpoint  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402

SIDE = 512
GREEN_A = -8.0      # a* below this, with chroma above CHROMA, counts as clearly green
CHROMA = 10.0
STYLES_DIR = ROOT / "styleforge" / "styles"
AMBER = ROOT / ".data" / "amber.jpg"


def lab_stats(rgb: np.ndarray) -> dict[str, float]:
    """Mean a*, b* and the green share of an RGB uint8 image (CIELAB, a*b* in −128..127)."""
    lab = cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2LAB)
    a, b = lab[..., 1], lab[..., 2]
    green = (a < GREEN_A) & (np.hypot(a, b) > CHROMA)
    return {"a": float(a.mean()), "b": float(b.mean()), "green_share": float(green.mean())}


def shrink(image: Image.Image, side: int = SIDE) -> np.ndarray:
    image = image.convert("RGB")
    image.thumbnail((side, side), Image.LANCZOS)
    return np.asarray(image)


def distance(x: dict, y: dict) -> float:
    return float(np.hypot(x["a"] - y["a"], x["b"] - y["b"]))


def style_row(weights: Path, paintings: Path, photos: list[Path]) -> dict:
    checkpoint = load_checkpoint(weights)
    painting_file = checkpoint.metadata.get("painting_file") or checkpoint.training_settings().get("style_image")
    painting = lab_stats(shrink(Image.open(paintings / painting_file)))
    stylizer = Stylizer(StylizeOptions(checkpoint=str(weights), device="cpu", precision="fp32",
                                       backend="reference"))
    per_photo = []
    for path in photos:
        photo = shrink(Image.open(path))
        with torch.inference_mode():
            batch = torch.from_numpy(photo.copy()).permute(2, 0, 1)[None].float()
            out = stylizer(batch)[0].clamp(0, 255).round().byte().permute(1, 2, 0).numpy()
        source, output = lab_stats(photo), lab_stats(out)
        per_photo.append({"photo": path.stem, "output": output, "photo_lab": source,
                          "to_painting": distance(output, painting), "to_photo": distance(output, source)})

    def median(key):
        return round(statistics.median(key(r) for r in per_photo), 2)
    return {"style": weights.stem, "painting_file": painting_file, "painting": painting,
            "to_painting": median(lambda r: r["to_painting"]), "to_photo": median(lambda r: r["to_photo"]),
            "green_share": median(lambda r: r["output"]["green_share"]),
            "photo_green_share": median(lambda r: r["photo_lab"]["green_share"]), "photos": per_photo}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--paintings", required=True, type=Path, help="the folder of the styles' paintings")
    p.add_argument("--styles", nargs="*", default=None, help="default: every built-in style")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    names = args.styles or sorted(f.stem for f in STYLES_DIR.glob("*.safetensors"))
    photos = [Path(x) for x in default_photos()] + ([AMBER] if AMBER.is_file() else [])
    rows = []
    print(f"{'style':20} {'to painting':>11} {'to photo':>9} {'green':>6} {'painting green':>14} {'photo green':>11}")
    for name in names:
        row = style_row(STYLES_DIR / f"{name}.safetensors", args.paintings, photos)
        rows.append(row)
        print(f"{name:20} {row['to_painting']:11.2f} {row['to_photo']:9.2f} {row['green_share']:6.3f} "
              f"{row['painting']['green_share']:14.3f} {row['photo_green_share']:11.3f}")
    write_json(args.json, {"photos": [x.name for x in photos], "side": SIDE, "green_a": GREEN_A,
                           "chroma": CHROMA, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
