"""The built-in styles: safetensors files shipped in `styleforge/styles/`.

A style is found by its file stem (`candy` → `styles/candy.safetensors`); its metadata
(painting, artist, licence status, training settings) is read from the file itself, so the
weights and what is said about them cannot drift apart. `STYLEFORGE_STYLES_DIR` points the
registry at another folder (tests, private style collections; `styleforge.switches`).
A style's slim network (`--model slim`, half width, distilled from the full one for CPUs) lives
in the `slim/` subfolder under the same stem.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from ..engine.options import DEFAULT_STYLE
from ..switches import switches
from .checkpoint import (
    IMAGE_SUFFIXES,
    Checkpoint,
    CheckpointError,
    image_not_style_message,
    load_checkpoint,
)

STYLES_DIR = Path(__file__).resolve().parent.parent / "styles"
STYLES_DIR_ENV = "STYLEFORGE_STYLES_DIR"
MODELS = ("full", "slim")


def current_styles_dir() -> Path:
    return switches().styles_dir or STYLES_DIR


@dataclass(frozen=True)
class StyleInfo:
    name: str
    path: Path
    painting: str = ""
    artist: str = ""
    licence: str = ""


def _info(path: Path) -> StyleInfo:
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    return StyleInfo(path.stem, path, meta.get("painting", ""), meta.get("artist", ""),
                     meta.get("licence", ""))


def list_styles(styles_dir: Path | None = None) -> list[StyleInfo]:
    """Every readable style file; an unreadable one is skipped with a warning, not fatal."""
    styles_dir = styles_dir or current_styles_dir()
    found = []
    for path in sorted(styles_dir.glob("*.safetensors")):
        try:
            found.append(_info(path))
        except Exception as exc:  # safetensors raises several types for a damaged header
            warnings.warn(f"skipping unreadable style file {path}: {exc}", stacklevel=2)
    return found


def default_style(styles_dir: Path | None = None) -> str:
    styles_dir = styles_dir or current_styles_dir()
    names = [s.name for s in list_styles(styles_dir)]
    if not names:
        raise CheckpointError("no built-in styles are installed; pass --checkpoint PATH")
    return DEFAULT_STYLE if DEFAULT_STYLE in names else names[0]


def resolve_style(name_or_path: str, styles_dir: Path | None = None, model: str = "full") -> Path:
    """A built-in name (its `model` network: full or slim), or a path to a .safetensors/.pth
    checkpoint (whose shapes say which network it is)."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    styles_dir = styles_dir or current_styles_dir()
    candidate = styles_dir / f"{name_or_path}.safetensors"
    if model == "slim" and candidate.is_file():
        slim = styles_dir / "slim" / candidate.name
        if not slim.is_file():
            shipped = (", ".join(s.name for s in list_styles(styles_dir / "slim"))
                       if (styles_dir / "slim").is_dir() else "")
            raise CheckpointError(f"style {name_or_path!r} has no slim network (slim styles: "
                                  f"{shipped or 'none installed'}); use --model full, or distil one "
                                  "with `styleforge train --teacher` (docs/cpu.md)")
        return slim
    if candidate.is_file():
        return candidate
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    if path.suffix.lower() in IMAGE_SUFFIXES:  # a painting given as the style, e.g. painting.jpg
        raise CheckpointError(f"{path}: no such file; and " + image_not_style_message(path))
    known = ", ".join(s.name for s in list_styles(styles_dir)) or "none installed"
    raise CheckpointError(f"unknown style {name_or_path!r} (built-in styles: {known}; "
                          "or give the path of a checkpoint file)")


def load_style(name_or_path: str, styles_dir: Path | None = None, model: str = "full") -> Checkpoint:
    return load_checkpoint(resolve_style(name_or_path, styles_dir, model))
