"""Sample sheets during arbitrary-style training: shipped photos × a few paintings, as one PNG.

Layout: the first row holds the paintings, the first column the photos, each other cell the
photo stylized with that painting by the current weights. The photos are the shipped assets
(`styleforge/assets/`), which training never sees. A progress view only, written atomically.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from ..models.arbitrary import ArbitraryStyleNet
from .samples import default_photos, load_photos

CELL = 192


def _cell(image: torch.Tensor) -> Image.Image:
    """(1, 3, H, W) or (3, H, W) float/uint8 0–255 → a CELL×CELL tile (fitted, white margins)."""
    x = image.squeeze(0).float().clamp(0, 255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()
    pil = Image.fromarray(np.ascontiguousarray(x))
    pil.thumbnail((CELL, CELL), Image.Resampling.BICUBIC)
    tile = Image.new("RGB", (CELL, CELL), "white")
    tile.paste(pil, ((CELL - pil.width) // 2, (CELL - pil.height) // 2))
    return tile


@torch.no_grad()
def save_sample_sheet(model: ArbitraryStyleNet, paintings: list[torch.Tensor], path: str | Path,
                      amp_dtype: torch.dtype | None = None, photos: list[torch.Tensor] | None = None) -> Path:
    """paintings: uint8/float (3, H, W) 0–255. Returns the PNG's path."""
    device = next(model.decoder.parameters()).device
    photos = photos if photos is not None else load_photos(default_photos(), max_side=256)
    sheet = Image.new("RGB", (CELL * (len(paintings) + 1), CELL * (len(photos) + 1)), "white")
    with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
        codes = []
        for painting in paintings:
            p = painting.float().unsqueeze(0) if painting.dim() == 3 else painting.float()
            scale = 256 / max(p.shape[-2:])
            p = F.interpolate(p, scale_factor=scale, mode="bilinear", antialias=True) if scale < 1 else p
            codes.append(model.encode_style(p.to(device)))
            sheet.paste(_cell(p), (CELL * len(codes), 0))
        for row, photo in enumerate(photos, start=1):
            sheet.paste(_cell(photo), (0, CELL * row))
            for col, code in enumerate(codes, start=1):
                out = model.stylize(photo.to(device), [(code, 1.0)])
                sheet.paste(_cell(out), (CELL * col, CELL * row))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    sheet.save(tmp, format="PNG")
    tmp.replace(path)
    return path
