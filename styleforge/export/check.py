"""Does an exported file compute what StyleForge computes? PSNR against the engine, per case.

The reference is the engine itself on the CPU in fp32 at stroke scale 1 (`engine.pipeline.Stylizer`
for a style, `engine.arbitrary.ArbitraryStylizer` for the arbitrary model, with the painting given
as a PIL image exactly `style_size` square, so the engine encodes it unresized). Inputs are crops
of the shipped sample photos (`styleforge/assets`), at two sizes and two batch sizes, one of them
not a multiple of the model's padding step. The engine runs one photo at a time, so a batch case
also shows the file keeps batch items apart. Not here: writing files.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..psnr import psnr
from .options import ExportOptions

ASSETS = Path(__file__).resolve().parent.parent / "assets"
PHOTOS = ("chelsea.jpg", "coffee.jpg", "astronaut.jpg")
PAINTING = "astronaut.jpg"       # any RGB image serves as the check's painting
CASES = ((1, 96, 128), (2, 75, 101))   # (batch, height, width)
MIN_PSNR_DB = 45.0


@dataclass(frozen=True)
class CheckResult:
    batch: int
    height: int
    width: int
    psnr_db: float

    @property
    def passed(self) -> bool:
        return self.psnr_db >= MIN_PSNR_DB

    def describe(self) -> str:
        value = "identical" if math.isinf(self.psnr_db) else f"{self.psnr_db:.1f} dB"
        return f"batch {self.batch}, {self.height}×{self.width}: {value}"


def _pil(name: str, height: int, width: int) -> Image.Image:
    """A centre crop of a sample photo with the aspect of (height, width), resized to it."""
    image = Image.open(ASSETS / name).convert("RGB")
    w, h = image.size
    scale = min(w / width, h / height)
    cw, ch = round(width * scale), round(height * scale)
    box = ((w - cw) // 2, (h - ch) // 2, (w - cw) // 2 + cw, (h - ch) // 2 + ch)
    return image.resize((width, height), Image.Resampling.LANCZOS, box=box)


def to_tensor(image: Image.Image) -> torch.Tensor:
    """RGB PIL → float32 (1, 3, H, W) in 0–255, as the engine reads images."""
    return torch.from_numpy(np.asarray(image, dtype=np.float32).copy()).permute(2, 0, 1).unsqueeze(0)


def photos(batch: int, height: int, width: int) -> torch.Tensor:
    return torch.cat([to_tensor(_pil(PHOTOS[i % len(PHOTOS)], height, width)) for i in range(batch)])


def _engine_options(options: ExportOptions):
    from ..engine.options import StylizeOptions
    common = {"device": "cpu", "precision": "fp32", "backend": "reference", "stroke_scale": 1.0,
              "tiling": "off"}
    if options.arbitrary:
        # The exported graph is the model's passes alone: the engine's lattice repair (`degrid`)
        # and palette transport are not in the file (docs/export.md), so the file is checked
        # against the engine without them.
        return StylizeOptions(arbitrary_weights=options.arbitrary_weights, passes=options.passes,
                              style_size=options.style_size, degrid=False, palette="none", **common)
    return StylizeOptions(style=options.style, **common)


def reference_and_inputs(options: ExportOptions):
    """(engine: photos → the engine's output, extra inputs the file takes after the photos)."""
    engine_options = _engine_options(options)
    if options.arbitrary:
        from ..engine.arbitrary import ArbitraryStylizer
        engine = ArbitraryStylizer(engine_options)
        painting = _pil(PAINTING, options.style_size, options.style_size)

        def reference(batch: torch.Tensor) -> torch.Tensor:
            return torch.cat([engine.stylize(x[None], [(painting, 1.0)]) for x in batch])
        return reference, (to_tensor(painting),)
    from ..engine.pipeline import Stylizer
    engine = Stylizer(engine_options)
    return (lambda batch: torch.cat([engine(x[None]) for x in batch])), ()


def check_file(options: ExportOptions, run: Callable[..., torch.Tensor],
               cases=CASES) -> list[CheckResult]:
    """run(photos, *extra) is the exported file; one PSNR per (batch, height, width) case."""
    reference, extra = reference_and_inputs(options)
    results = []
    for batch, height, width in cases:
        x = photos(batch, height, width)
        with torch.no_grad():
            want = reference(x)
        got = run(x, *extra)
        if tuple(got.shape) != tuple(want.shape):
            raise AssertionError(f"the exported file returned shape {tuple(got.shape)} for input "
                                 f"{tuple(x.shape)}; the engine returns {tuple(want.shape)}")
        results.append(CheckResult(batch, height, width, psnr(got, want)))
    return results
