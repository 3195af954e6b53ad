"""A painting given as the style: any path or PIL image → RGB, its label, its content key, and the
tensor the style encoder reads (longer side `style_size`, shorter at least `MIN_STYLE_SIDE`:
the statistics of a tiny painting survive an upscale better than padding)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Union

import numpy as np
import torch
from PIL import Image

from ..io.image import ImageError, load_image, open_image_file

Painting = Union[str, os.PathLike, Image.Image]
MIN_STYLE_SIDE = 64


def painting_image(painting: Painting, max_pixels: int | None = None) -> Image.Image:
    """Any painting → RGB PIL image (alpha composited on white). Raises ImageError."""
    if isinstance(painting, Image.Image):
        image = painting
        if image.width < 1 or image.height < 1:
            raise ImageError("style image has no pixels")
    else:
        loaded = load_image(painting, max_pixels)
        if loaded.alpha is None:
            return loaded.rgb
        image = loaded.rgb.convert("RGBA")
        image.putalpha(loaded.alpha)
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def painting_label(painting: Painting) -> str:
    return "image" if isinstance(painting, Image.Image) else Path(painting).name


def painting_key(painting: Painting) -> str:
    """SHA-256 of the file's bytes, or of a PIL image's mode, size and pixels."""
    h = hashlib.sha256()
    if isinstance(painting, Image.Image):
        h.update(f"{painting.mode}{painting.size}".encode())
        h.update(painting.tobytes())
    else:
        try:
            with open_image_file(Path(painting)) as f:   # refuses a FIFO or /dev/zero first
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            raise ImageError(f"{painting}: cannot read ({exc.strerror or exc})") from None
    return h.hexdigest()


def painting_tensor(image: Image.Image, style_size: int) -> torch.Tensor:
    """RGB PIL → float (1, 3, H, W) 0–255, longer side = style_size, shorter ≥ MIN_STYLE_SIDE."""
    w, h = image.size
    scale = max(style_size / max(w, h), MIN_STYLE_SIDE / min(w, h))
    size = (max(MIN_STYLE_SIDE, round(w * scale)), max(MIN_STYLE_SIDE, round(h * scale)))
    if size != image.size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    return torch.from_numpy(np.asarray(image, dtype=np.float32).copy()).permute(2, 0, 1).unsqueeze(0)
