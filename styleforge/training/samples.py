"""Sample stylizations during training: a few fixed photos through the current weights, as a PNG.

The default photos are the shipped assets (`styleforge/assets/`), which the training never sees,
so the sheets show how a style generalises. Each sheet is one row per photo: photo | stylized.
This is a progress view, not the engine: it pads to a multiple of 4 with the engine's rule and
runs the training model directly.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..engine.pipeline import pad_for_network

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
MAX_SIDE = 512          # samples are views: bigger photos are shrunk first
ROW_HEIGHT = 256


def default_photos() -> list[Path]:
    return sorted(p for p in ASSETS_DIR.glob("*") if p.suffix.lower() in {".jpg", ".jpeg", ".png"})


def load_photos(paths: list[str | Path], max_side: int = MAX_SIDE) -> list[torch.Tensor]:
    """Each photo as float (1, 3, H, W) in 0–255, longer side at most max_side."""
    photos = []
    for path in paths:
        with Image.open(path) as im:
            im = im.convert("RGB")
            im.thumbnail((max_side, max_side), Image.Resampling.BICUBIC)
            array = np.asarray(im, dtype=np.float32).copy()
        photos.append(torch.from_numpy(array).permute(2, 0, 1).unsqueeze(0))
    return photos


def network_photo(path: str | Path, max_side: int) -> torch.Tensor:
    """A photo as the dev tools score it: float (1, 3, H, W) in 0–255, shrunk by the engine's own
    resize (`io.image`) to a longer side of at most max_side, then cropped (not padded) to
    multiples of 4 so the network's output has the photo's size."""
    from ..io.image import load_image, pil_to_tensor
    x = pil_to_tensor(load_image(path).resized(max_side).rgb)
    return x[..., :x.shape[-2] // 4 * 4, :x.shape[-1] // 4 * 4]


@torch.no_grad()
def stylize_photos(model: torch.nn.Module, photos: list[torch.Tensor],
                   amp_dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    """uint8 (3, H, W) outputs on the CPU, one per photo, same size as the photo."""
    param = next(model.parameters())
    outputs = []
    for photo in photos:
        h, w = photo.shape[-2:]
        x = pad_for_network(photo.to(param.device))
        with torch.autocast(param.device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            y = model(x)
        outputs.append(y[0, :, :h, :w].float().clamp(0, 255).round().to(torch.uint8).cpu())
    return outputs


def _to_pil(image: torch.Tensor) -> Image.Image:
    if image.dtype != torch.uint8:
        image = image.squeeze(0).clamp(0, 255).round().to(torch.uint8)
    pil = Image.fromarray(image.permute(1, 2, 0).numpy())
    width = max(1, round(pil.width * ROW_HEIGHT / pil.height))
    return pil.resize((width, ROW_HEIGHT), Image.Resampling.BICUBIC)


def save_sheet(photos: list[torch.Tensor], outputs: list[torch.Tensor], path: str | Path) -> Path:
    """photo | stylized, one row each, written as PNG (`io.atomic`: unique temp name, fsync, rename)."""
    rows = [(_to_pil(p), _to_pil(o)) for p, o in zip(photos, outputs)]
    width = max(a.width + b.width for a, b in rows)
    sheet = Image.new("RGB", (width, ROW_HEIGHT * len(rows)), "white")
    for i, (a, b) in enumerate(rows):
        sheet.paste(a, (0, i * ROW_HEIGHT))
        sheet.paste(b, (a.width, i * ROW_HEIGHT))
    from ..io.atomic import atomic_write
    return atomic_write(path, lambda tmp: sheet.save(tmp, format="PNG", optimize=True))
