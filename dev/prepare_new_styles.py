"""Extract, crop and downscale the v2 style paintings from Debian's stellarium-data.

    python dev/prepare_new_styles.py --out .data/styles [--deb /tmp/stellarium-data_0.22.2-1_all.deb]

Without --deb it runs `apt-get download stellarium-data` (246 MB) into --cache. The catalogue
(`styleforge/training/catalogue.py`) names each file, its source path and licence: the artworks
are public domain by age, the package is GPL-2+. Stellarium draws its figures additively on the
night sky, so their black means "no paint", not black paint: trained as is, the styles turned
photos near-black (v2 at 1,800 steps). Figures on black are therefore cropped to their bounding
box (pixels brighter than 24) and laid on a parchment tone with a soft luminance matte; the
Primeros Memoriales page, white lines on black for the sky, is inverted back to ink on paper.
The Dendera photo is cut to the relief: its lower-left corner is a museum wall and frame, not
artwork. aratea_draco.jpg is the Leiden Aratea's Draco miniature (fol. 3v, framed, blue ground),
cut from the package's photo of the open book: aratea's painting since round 14 (its Eridanus
figure on flat parchment, aratea.jpg, stays for the earlier rounds' plans). Each image is
written as JPEG q92 4:4:4 with its longer side exactly 640 px (~100 KB): training resizes a
painting to style_size (512) up or down, but issue 44's yardstick (style_metrics.py) only shrinks
one to 512, so a smaller file (the 399-px codex page) was scored against another scale of the
painting than the one trained on (docs/training.md "Round 7b plan"). The images are training
data: they go into an ignored folder and are never committed.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = "./usr/share/stellarium/skycultures/"
# file name in the styles folder ← path under skycultures/, how its black is treated, and a crop
# box (left, top, right, bottom) in source pixels or None
FILES = {
    "song_star_chart.jpg": ("chinese_medieval/xyxfy.png", "as_is", None),
    "dendera.jpg": ("egyptian_dendera/Dendera_zodiac_Louvre.jpg", "as_is", (170, 0, 844, 585)),
    "aratea.jpg": ("greek_leidenAratea/Eri_Aratea_bg.jpg", "figure", None),
    "al_sufi.jpg": ("arabic_al-sufi/Arg.png", "figure", None),
    "primeros_memoriales.jpg": ("aztec/Primeros_Memoriales.png", "ink", None),
    # the whole Draco miniature (red frame, blue ground) rather than one figure on parchment
    "aratea_draco.jpg": ("greek_leidenAratea/descr_pics/Aratea fol. 3v und 4r.jpg", "as_is", (80, 45, 628, 655)),
}
SIDE = 640
PARCHMENT = np.array([232.0, 219.0, 188.0])


def fetch_deb(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("stellarium-data_*.deb"))
    if not found:
        subprocess.run(["apt-get", "download", "stellarium-data"], cwd=cache, check=True)
        found = sorted(cache.glob("stellarium-data_*.deb"))
    return found[-1]


def members(deb: Path) -> dict[str, bytes]:
    """The wanted files' bytes, read from the .deb's data tarball (dpkg-deb streams it)."""
    tar_stream = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    wanted = {ROOT + src for src, _, _ in FILES.values()}
    out = {}
    with tarfile.open(fileobj=tar_stream.stdout, mode="r|") as tar:
        for info in tar:
            if info.name in wanted:
                out[info.name.removeprefix(ROOT)] = tar.extractfile(info).read()
    tar_stream.wait()
    return out


def to_side(image: Image.Image, side: int = SIDE) -> Image.Image:
    """Longer side exactly `side`: down with Lanczos, up (a small source) with bicubic."""
    scale = side / max(image.size)
    if scale == 1:
        return image
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.LANCZOS if scale < 1 else Image.BICUBIC)


def prepare(data: bytes, mode: str, crop: tuple[int, int, int, int] | None = None) -> Image.Image:
    import io
    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGBA").convert("RGB") if im.mode in ("P", "LA", "RGBA") else im.convert("RGB")
    if crop is not None:
        im = im.crop(crop)
    if mode != "as_is":
        bright = np.asarray(im.convert("L")) > 24
        ys, xs = np.nonzero(bright)
        im = im.crop((xs.min(), ys.min(), xs.max() + 1, ys.max() + 1))
        rgb = np.asarray(im, dtype=np.float64)
        if mode == "ink":      # white strokes → dark ink; the rest is paper
            ink = rgb.max(axis=2, keepdims=True) / 255.0
            rgb = PARCHMENT * (1.0 - 0.85 * ink)
        else:                  # additive figure: brightness is its coverage
            cover = np.clip(rgb.max(axis=2, keepdims=True) / 64.0, 0.0, 1.0)
            rgb = cover * rgb + (1.0 - cover) * PARCHMENT
        im = Image.fromarray(np.clip(rgb + 0.5, 0, 255).astype(np.uint8))
    return to_side(im)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=".data/styles")
    p.add_argument("--deb", default=None, help="a downloaded stellarium-data .deb")
    p.add_argument("--cache", default="/tmp/styleforge-debs")
    args = p.parse_args()
    deb = Path(args.deb) if args.deb else fetch_deb(Path(args.cache))
    found = members(deb)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, (src, mode, crop) in FILES.items():
        if src not in found:
            print(f"{deb.name} has no {src}", file=sys.stderr)
            return 1
        image = prepare(found[src], mode, crop)
        image.save(out / name, quality=92, subsampling=0)
        print(f"{out / name}: {image.size[0]}x{image.size[1]}, {(out / name).stat().st_size // 1024} KB ← {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
