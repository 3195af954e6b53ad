"""The style gallery: one thumbnail per built-in style, drawn from a shipped photo.

Thumbnails are the real networks on a small copy of a sample photo (`styleforge/assets/`), so
the gallery shows what each style does rather than the painting. They are cached in the app's
`thumbs/` folder under a key of the style file's name, size and modification time: restarting
with the same `--temp-dir` reuses them, a changed style file is redrawn. `Thumbnails` draws the
missing ones in a background thread (on a CPU they take tens of seconds), so the app answers at
once and the page fills its gallery as they come. Not here: the engine (thumbnails go through
`styleforge.regions`, the same path as user requests).
"""
from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Callable

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


def _small_photo(photo: Path) -> Image.Image:
    small = load_image(photo).rgb.copy()
    small.thumbnail((THUMB_SIDE, THUMB_SIDE), Image.LANCZOS)
    return small


class Thumbnails:
    """The gallery's thumbnails: those cached at once, the rest drawn by `start()` in a daemon
    thread. `items()` is what is drawn so far, in style order; `ready` is set when all are
    (or drawing failed: the gallery then shows what there is, and `error` says why)."""

    def __init__(self, styles: list[StyleInfo], folder: Path, say: Callable[[str], None] | None = None,
                 **engine):
        self.engine, self.say = engine, say or (lambda message: None)
        photos = sample_photos()
        self.photo = photos[0] if photos else None
        self.paths = [(folder / f"{style.name}-{_key(style, self.photo)}.jpg", style.name)
                      for style in styles] if self.photo else []
        self.ready = threading.Event()
        self.error: str | None = None
        if all(path.is_file() for path, _ in self.paths):
            self.ready.set()

    def items(self) -> list[tuple[str, str]]:
        return [(str(path), name) for path, name in self.paths if path.is_file()]

    def start(self) -> None:
        if not self.ready.is_set():
            threading.Thread(target=self._draw_logged, name="styleforge-gallery", daemon=True).start()

    def draw(self) -> None:
        """Draw every missing thumbnail in this thread."""
        try:
            missing = [(path, name) for path, name in self.paths if not path.is_file()]
            if missing:
                small = _small_photo(self.photo)
                for path, name in missing:
                    result = stylize_regions(small, Look(name), **self.engine)
                    save_image(result.image, path, quality=85)
        finally:
            self.ready.set()

    def _draw_logged(self) -> None:
        start = time.perf_counter()
        missing = sum(not path.is_file() for path, _ in self.paths)
        self.say(f"drawing the style gallery in the background ({missing} thumbnails)…")
        try:
            self.draw()
        except Exception as exc:   # the app still serves; the gallery shows what was drawn
            self.error = f"{type(exc).__name__}: {exc}"
            self.say(f"the style gallery could not be drawn: {self.error}")
            return
        self.say(f"style gallery ready ({time.perf_counter() - start:.1f} s)")
