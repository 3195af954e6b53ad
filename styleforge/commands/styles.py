"""`styleforge styles [--sheet OUT.png [--photo PATH ...]]`: list the built-in styles, or draw them.

Without flags: a table of every style in the registry (name, painting, artist, licence), read
from each file's own metadata. With `--sheet`: a contact sheet, one row per photo (default: the
sample photos in `styleforge/assets/`), the photo first, then the photo in every style, each
cell labelled; written atomically. Whatever styles the registry holds are drawn, so it also works
with `STYLEFORGE_STYLES_DIR`. This is a view over the library; it trains and measures nothing.
"""
from __future__ import annotations

import argparse
from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
LABEL_HEIGHT = 22
GAP = 6


def register(subparsers) -> None:
    p = subparsers.add_parser("styles", help="list the built-in styles or draw a contact sheet",
                              description="List the built-in styles, or draw them on sample photos.")
    p.add_argument("--sheet", metavar="OUT", help="write a contact sheet image to OUT (e.g. sheet.png)")
    p.add_argument("--photo", action="append", metavar="PATH",
                   help="photo for the sheet (repeatable; default: the shipped sample photos)")
    p.add_argument("--cell", type=int, default=192, metavar="N",
                   help="each cell's longer side in pixels (default 192)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--precision", choices=("auto", "fp32", "fp16", "bf16"), default="auto")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..models.registry import current_styles_dir, list_styles
    console = Console(highlight=False, soft_wrap=True)
    styles = list_styles()
    if args.sheet is None:
        if not styles:
            console.print(f"no built-in styles installed (looked in {current_styles_dir()})",
                          markup=False)
            return 0
        table = Table(title="built-in styles")
        for column in ("name", "painting", "artist", "licence"):
            table.add_column(column)
        for style in styles:
            table.add_row(style.name, style.painting, style.artist, style.licence)
        console.print(table)
        return 0
    if not styles:
        console.print(f"error: no styles to draw (looked in {current_styles_dir()})",
                      style="bold red", markup=False)
        return 1
    if args.cell < 8:
        console.print("error: --cell must be at least 8 pixels", style="bold red")
        return 2
    photos = [Path(p) for p in args.photo] if args.photo else sorted(ASSETS_DIR.glob("*.jpg"))
    try:
        path = write_sheet(Path(args.sheet), photos, [s.name for s in styles], args.cell,
                           args.device, args.precision)
    except (ValueError, RuntimeError) as exc:  # ImageError, CheckpointError, device errors
        console.print(f"error: {exc}", style="bold red", markup=False)
        return 1
    console.print(f"wrote {path}: {len(photos)} photo(s) × {len(styles)} style(s)", markup=False)
    return 0


def write_sheet(out: Path, photos: list[Path], style_names: list[str], cell: int,
                device: str = "auto", precision: str = "auto") -> Path:
    """Rows = photos, columns = the photo then each style; returns the written path."""
    from PIL import Image, ImageDraw, ImageFont

    from ..api import stylize
    from ..io.image import load_image, save_image
    originals = [load_image(p).resized(cell).rgb for p in photos]
    columns = [("photo", originals)]
    for name in style_names:  # style-major, so each style's weights load once
        columns.append((name, [stylize(image, style=name, device=device, precision=precision)
                               for image in originals]))
    # Every image of a row is the same photo at the same size, so rows are as tall as it.
    tops = [GAP]
    for image in originals:
        tops.append(tops[-1] + image.height + LABEL_HEIGHT + GAP)
    pitch_x = cell + GAP
    sheet = Image.new("RGB", (GAP + pitch_x * len(columns), tops[-1]), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for col, (label, images) in enumerate(columns):
        for row, image in enumerate(images):
            x, y = GAP + col * pitch_x, tops[row]
            sheet.paste(image, (x + (cell - image.width) // 2, y))
            # Placed by measured width: Pillow's bitmap fallback font supports no anchors.
            width = draw.textlength(label, font=font)
            draw.text((x + (cell - width) / 2, y + image.height + 4), label, fill="black", font=font)
    return save_image(sheet, out)
