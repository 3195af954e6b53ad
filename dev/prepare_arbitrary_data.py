"""Make the compact, git-ignored training set of the arbitrary-style model in `.data/arbitrary/`.

The GPU machine sees only the repository, so the data travels inside it (ignored by git, ≤ ~25
MB besides the VGG file). Written:
  content/                 photos, centre squares of 272 px (JPEG q80); the last EVAL_PHOTOS
                           photos of the shared set are kept out for evaluation
  styles/<group>/          paintings, longest side 512 (q85): every group of styles_extra capped
                           at --group-cap images (the fantasy-portrait group dominates otherwise),
                           plus the famous paintings of styles/ except the held-out four
  eval/photos/             the held-out photos and amber.jpg, longest side 512 (q92)
  eval/paintings_held_out/ the four held-out paintings;  eval/paintings_all/: all 13
  vgg16_relu5_1.fp16.pth   a copy of the encoder weights (also the metric network: its first
                           ten convs are vgg16_relu4_3's, tensor for tensor)
Usage: python dev/prepare_arbitrary_data.py [--shared ../shared/data] [--photos 900]
Never commit what this writes: styles_extra is for training only (see shared/data/SOURCES.md).
"""
from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT = ("the_scream", "composition_vii", "the_shipwreck_of_the_minotaur", "candy")
EVAL_PHOTOS = 12
CONTENT_SIDE = 272     # the trainer's content_size: 256 crops with a little room to move


def save(src: Path, dst: Path, square: int | None, max_side: int | None, quality: int) -> None:
    with Image.open(src) as im:
        im = im.convert("RGB")
        if square:
            side = min(im.size)
            left, top = (im.width - side) // 2, (im.height - side) // 2
            im = im.crop((left, top, left + side, top + side)).resize((square, square), Image.Resampling.BICUBIC)
        elif max_side and max(im.size) > max_side:
            im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        dst.parent.mkdir(parents=True, exist_ok=True)
        im.save(dst, quality=quality, optimize=True)


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path,
                        help="the shared data folder (default: ../shared/data, searched upwards)")
    parser.add_argument("--out", type=Path, default=ROOT / ".data" / "arbitrary")
    parser.add_argument("--photos", type=int, default=800, help="training photos")
    parser.add_argument("--group-cap", type=int, default=48, help="most paintings per styles_extra group")
    parser.add_argument("--no-vgg", dest="vgg", action="store_false")
    args = parser.parse_args()
    shared = args.shared or next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()),
                                 None)
    if shared is None or not shared.is_dir():
        parser.error("shared data folder not found; pass --shared")
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    photos = sorted((shared / "content").glob("*.jpg"))
    train, held = photos[:-EVAL_PHOTOS], photos[-EVAL_PHOTOS:]
    step = max(1, len(train) // args.photos)
    for src in train[::step][:args.photos]:
        save(src, out / "content" / src.name, CONTENT_SIDE, None, 80)
    groups: dict[str, list[Path]] = {}
    for src in sorted((shared / "styles_extra").glob("*.jpg")):
        groups.setdefault(re.sub(r"_\d+$", "", src.stem), []).append(src)
    for group, members in groups.items():
        stride = max(1, len(members) // args.group_cap)
        for src in members[::stride][:args.group_cap]:
            save(src, out / "styles" / group / src.name, None, 512, 85)
    for src in sorted((shared / "styles").glob("*.jpg")):
        save(src, out / "eval" / "paintings_all" / src.name, None, 512, 92)
        if src.stem.startswith(HELD_OUT):
            save(src, out / "eval" / "paintings_held_out" / src.name, None, 512, 92)
        else:
            save(src, out / "styles" / "famous" / src.name, None, 512, 85)
    for src in [*held, shared / "amber.jpg"]:
        save(src, out / "eval" / "photos" / src.name, None, 512, 92)
    if args.vgg:
        shutil.copy(shared / "vgg16_relu5_1.fp16.pth", out / "vgg16_relu5_1.fp16.pth")
    for part in ("content", "styles", "eval"):
        print(f"{part:8s} {size_mb(out / part):6.1f} MB  {sum(1 for p in (out / part).rglob('*.jpg'))} images")
    print(f"total    {size_mb(out):6.1f} MB in {out}")


if __name__ == "__main__":
    main()
