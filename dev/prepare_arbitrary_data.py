"""Make the compact, git-ignored training set of the arbitrary-style model in `.data/arbitrary/`.

The GPU machine sees only the repository plus ~20 MB of carried, ignored files per call, so the
data travels in two parts, each carried by one call and staged on the device
(`dev/device/train_arbitrary.sh stage`), where it stays while the machine is warm:
  part_vgg/vgg16_relu5_1.fp16.pth   the encoder/loss weights (also the metric network: its first
                                    ten convs are vgg16_relu4_3's, tensor for tensor), 20 MB
  part_images/content/              photos, centre squares of 272 px (JPEG q75); the last
                                    EVAL_PHOTOS photos of the shared set are kept out for eval
  part_images/styles/<source>/      paintings, longest side 512 (q80), grouped by SOURCE (all
                                    Wesnoth campaigns are one source: they are one game's art),
                                    each source capped at --source-cap images (evenly strided),
                                    plus the famous paintings of styles/ except the held-out four
  part_images/eval/photos/          the held-out photos and amber.jpg, longest side 512 (q90)
  part_images/eval/paintings_held_out/         the four held-out famous paintings (the bar)
  part_images/eval/paintings_held_out_source/  every painting of the held-out SOURCE(s)
                                    (--hold-out-source, default mate): never trained on either
--extra NAME=DIR adds a folder of other permissively licensed art as source NAME (record its
package, version and licence in docs/arbitrary.md). Never commit what this writes: styles_extra
is for training only (shared/data/SOURCES.md).
Usage: python dev/prepare_arbitrary_data.py [--shared ../shared/data] [--photos 600]
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
SUFFIXES = {".jpg", ".jpeg", ".png", ".webp"}
MIN_EXTRA_SIDE = 128   # --extra: smaller images are icons and tiles, not art


def save(src: Path, dst: Path, square: int | None, max_side: int | None, quality: int) -> None:
    with Image.open(src) as im:
        if im.mode in ("RGBA", "LA", "P"):
            rgba = im.convert("RGBA")
            im = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
        im = im.convert("RGB")
        if square:
            side = min(im.size)
            left, top = (im.width - side) // 2, (im.height - side) // 2
            im = im.crop((left, top, left + side, top + side)).resize((square, square), Image.Resampling.BICUBIC)
        elif max_side and max(im.size) > max_side:
            im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        dst.parent.mkdir(parents=True, exist_ok=True)
        im.save(dst.with_suffix(".jpg"), quality=quality, optimize=True)


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def source_of(stem: str) -> str:
    """`wesnoth-httt_0012` → `wesnoth`, `gimp_0003` → `gimp`: the package family, not the campaign."""
    return re.split(r"[-_]", re.sub(r"_\d+$", "", stem))[0]


def strided(members: list[Path], cap: int) -> list[Path]:
    if len(members) <= cap:
        return members
    return [members[round(i * (len(members) - 1) / (cap - 1))] for i in range(cap)] if cap > 1 else members[:1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path,
                        help="the shared data folder (default: ../shared/data, searched upwards)")
    parser.add_argument("--out", type=Path, default=ROOT / ".data" / "arbitrary")
    parser.add_argument("--photos", type=int, default=600, help="training photos")
    parser.add_argument("--source-cap", type=int, default=60, help="most paintings per source")
    parser.add_argument("--hold-out-source", nargs="*", default=["mate"], metavar="SOURCE",
                        help="styles_extra sources kept out of training, for evaluation")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=DIR",
                        help="another folder of art, as source NAME (repeatable)")
    parser.add_argument("--no-vgg", dest="vgg", action="store_false")
    args = parser.parse_args()
    shared = args.shared or next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()),
                                 None)
    if shared is None or not shared.is_dir():
        parser.error("shared data folder not found; pass --shared")
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    images = out / "part_images"
    photos = sorted((shared / "content").glob("*.jpg"))
    train, held = photos[:-EVAL_PHOTOS], photos[-EVAL_PHOTOS:]
    for src in strided(train, args.photos):
        save(src, images / "content" / src.name, CONTENT_SIDE, None, 75)
    sources: dict[str, list[Path]] = {}
    for src in sorted((shared / "styles_extra").glob("*.jpg")):
        sources.setdefault(source_of(src.stem), []).append(src)
    for spec in args.extra:
        name, _, folder = spec.partition("=")
        sources[name] = sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in SUFFIXES
                               and min(Image.open(p).size) >= MIN_EXTRA_SIDE)
    for source, members in sorted(sources.items()):
        held_source = source in args.hold_out_source
        dest = images / "eval" / "paintings_held_out_source" if held_source else images / "styles" / source
        for src in members if held_source else strided(members, args.source_cap):
            save(src, dest / f"{source}_{src.stem}.jpg" if not src.stem.startswith(source) else dest / src.name,
                 None, 512, 85 if held_source else 80)
    for src in sorted((shared / "styles").glob("*.jpg")):
        if src.stem.startswith(HELD_OUT):
            save(src, images / "eval" / "paintings_held_out" / src.name, None, 512, 92)
        else:
            save(src, images / "styles" / "famous" / src.name, None, 512, 80)
    for src in [*held, shared / "amber.jpg"]:
        save(src, images / "eval" / "photos" / src.name, None, 512, 90)
    if args.vgg:
        (out / "part_vgg").mkdir(parents=True)
        shutil.copy(shared / "vgg16_relu5_1.fp16.pth", out / "part_vgg" / "vgg16_relu5_1.fp16.pth")
    for folder in sorted((images / "styles").iterdir()):
        print(f"  styles/{folder.name:<12} {sum(1 for _ in folder.glob('*.jpg')):4d} images")
    for part in ("content", "styles", "eval"):
        print(f"{part:8s} {size_mb(images / part):6.1f} MB  {sum(1 for p in (images / part).rglob('*.jpg'))} images")
    for part in sorted(out.iterdir()):
        print(f"{part.name:<12} {size_mb(part):6.1f} MB  (one call's carry: .data/arbitrary/{part.name})")


if __name__ == "__main__":
    main()
