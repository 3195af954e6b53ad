"""The style gallery: one thumbnail per built-in style, drawn at startup from a shipped photo.

Thumbnails are the real networks on a small copy of a sample photo (`styleforge/assets/`), so
the gallery shows what each style does rather than the painting. They are cached in the app's
`thumbs/` folder under a key of the style file's name, size and modification time: restarting
with the same `--temp-dir` reuses them, a changed style file is redrawn. Not here: the engine
(thumbnails go through `styleforge.regions`, the same path as user requests).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from PIL import Image

from ..io.image import load_image, save_image
from ..models.registry import StyleInfo
from ..regions import Look, stylize_regions

ASSETS = Path(__file__).resolve().parent.parent / "assets"
SAMPLE_PHOTOS = ("chelsea.jpg", "astronaut.jpg", "coffee.jpg")
THUMB_SIDE = 160


def sample_photos() -> list[Path]:
    return [ASSETS / name for name in SAMPLE_PHOTOS if (ASSETS / name).is_file()]


def _key(style: StyleInfo, photo: Path) -> str:
    stat = style.path.stat()
    text = f"{style.path.name}:{stat.st_size}:{stat.st_mtime_ns}:{photo.name}:{THUMB_SIDE}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def build_thumbnails(styles: list[StyleInfo], folder: Path, device: str = "auto",
                     precision: str = "auto", backend: str = "auto") -> list[tuple[str, str]]:
    """[(thumbnail path, style name)] in the order of `styles`, as gr.Gallery takes them."""
    photos = sample_photos()
    if not photos:
        return []
    loaded = load_image(photos[0])
    small = loaded.rgb.copy()
    small.thumbnail((THUMB_SIDE, THUMB_SIDE), Image.LANCZOS)
    items = []
    for style in styles:
        path = folder / f"{style.name}-{_key(style, photos[0])}.jpg"
        if not path.is_file():
            result = stylize_regions(small, Look(style.name), device=device, precision=precision,
                                     backend=backend)
            save_image(result.image, path, quality=85)
        items.append((str(path), style.name))
    return items
