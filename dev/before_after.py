"""Draw the README's before/after picture: the sample cat and the default style, side by side.

    PYTHONPATH=. python dev/before_after.py [--style NAME] [--out docs/images/before_after.jpg]

The stylized half is what `styleforge stylize` gives for the photo on this machine's default path.
A dev tool, not part of the package.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image

import styleforge
from styleforge.engine.options import DEFAULT_STYLE

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT / "styleforge" / "assets" / "chelsea.jpg"
HEIGHT, GAP = 300, 10


def before_after(photo: Path, style: str) -> Image.Image:
    before = Image.open(photo).convert("RGB")
    after = styleforge.stylize(str(photo), style)
    halves = [im.resize((round(im.width * HEIGHT / im.height), HEIGHT), Image.Resampling.LANCZOS)
              for im in (before, after)]
    sheet = Image.new("RGB", (halves[0].width + GAP + halves[1].width, HEIGHT), "white")
    sheet.paste(halves[0], (0, 0))
    sheet.paste(halves[1], (halves[0].width + GAP, 0))
    return sheet


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--style", default=DEFAULT_STYLE)
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "before_after.jpg")
    args = p.parse_args()
    before_after(PHOTO, args.style).save(args.out, quality=90, subsampling=0)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
