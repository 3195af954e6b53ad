"""Held-out quality of the arbitrary-style model: the four measures of `shared/tools/style_metrics.py`.

style_ratio  = Σ_l ‖G_l(out) − G_l(painting)‖² / Σ_l ‖G_l(photo) − G_l(painting)‖², Gram matrices
               (divided by C·H·W) at relu1_2, relu2_2, relu3_3, relu4_3 of the zero-padded VGG16
               loss network (`models/vgg.py`, weights vgg16_relu4_3.fp16.pth), fp32.
content_dist = ‖relu3_3(out) − relu3_3(photo)‖ / ‖relu3_3(photo)‖.
palette_dist = sliced Wasserstein distance between the RGB colours of the 8-bit output and of the
               painting file, both resized (bilinear) to 256 px on the longer side: 32 fixed
               directions (NumPy's default_rng(0), as the tool), 101 quantiles, 0–255 units.
grid_score   = `grid.grid_score` of the 8-bit output (luma rounded, as the tool's "L").
Photo, output and painting are read as the tool reads them (PIL RGB, longest side shrunk to 512
px with bicubic resampling); the photo is stylized at that size. Medians over all pairs. The
model's own encoder is NOT the yardstick: the metric network is the one the issue names.
The rows, per-painting medians and the contact sheet: `arbitrary_report.py`.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..models.vgg import VGG16Features, load_vgg16
from .grid import grid_score_rgb

SIZE = 512
LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")


@dataclass
class PairScore:
    photo: str
    painting: str
    style_ratio: float
    content_dist: float
    palette_dist: float = float("nan")
    grid_score: float = float("nan")

    MEASURES = ("style_ratio", "content_dist", "palette_dist", "grid_score")


def load_scaled(path: str | Path, max_side: int = SIZE) -> torch.Tensor:
    """As the tool's load(): RGB, shrink so the longest side is ≤ max_side (bicubic), float 0–255."""
    with Image.open(path) as im:
        im = im.convert("RGB")
        if max(im.size) > max_side:
            s = max_side / max(im.size)
            im = im.resize((round(im.width * s), round(im.height * s)), Image.BICUBIC)
        return torch.from_numpy(np.asarray(im).copy()).permute(2, 0, 1).float()[None]


def _gram(f: torch.Tensor) -> torch.Tensor:
    b, c, h, w = f.shape
    f = f.reshape(b, c, h * w)
    return f @ f.transpose(1, 2) / (c * h * w)


@torch.no_grad()
def metrics(vgg: VGG16Features, photo: torch.Tensor, out: torch.Tensor, painting: torch.Tensor) -> tuple[float, float]:
    """(style_ratio, content_dist) for float (1, 3, H, W) 0–255 images, out resized to the photo."""
    if out.shape[-2:] != photo.shape[-2:]:
        out = torch.nn.functional.interpolate(out, size=photo.shape[-2:], mode="bilinear")
    dev = next(vgg.parameters()).device
    fp, fo, fs = (vgg(x.to(dev).float()) for x in (photo, out, painting))
    gs = [_gram(getattr(fs, n)) for n in LAYERS]
    loss = lambda feats: sum(((_gram(getattr(feats, n)) - g) ** 2).sum().item() for n, g in zip(LAYERS, gs))  # noqa: E731
    ratio = loss(fo) / loss(fp)
    dist = ((fo.relu3_3 - fp.relu3_3).norm() / fp.relu3_3.norm()).item()
    return ratio, dist


_DIRECTIONS = np.random.default_rng(0).normal(size=(3, 32))
_DIRECTIONS /= np.linalg.norm(_DIRECTIONS, axis=0)
PALETTE_SIDE = 256


def _palette_pixels(image: Image.Image) -> np.ndarray:
    s = PALETTE_SIDE / max(image.size)
    image = image.convert("RGB").resize((max(1, round(image.width * s)), max(1, round(image.height * s))),
                                        Image.BILINEAR)
    return np.asarray(image, dtype=np.float64).reshape(-1, 3)


class PairScorer:
    """One photo and one painting, scored against any number of outputs: the photo's features,
    the painting's Grams and its palette pixels are computed once."""

    @torch.no_grad()
    def __init__(self, vgg: VGG16Features, photo: torch.Tensor, painting_path: str | Path,
                 painting: torch.Tensor | None = None):
        self.vgg, self.photo, self.dev = vgg, photo, next(vgg.parameters()).device
        style = load_scaled(painting_path) if painting is None else painting
        self.grams = [_gram(getattr(vgg(style.to(self.dev).float()), n)) for n in LAYERS]
        self.fp = vgg(photo.to(self.dev).float())
        self.base = self._gram_loss(self.fp)
        with Image.open(painting_path) as im:
            self.palette = _palette_pixels(im) @ _DIRECTIONS

    def _gram_loss(self, feats) -> float:
        return sum(((_gram(getattr(feats, n)) - g) ** 2).sum().item() for n, g in zip(LAYERS, self.grams))

    @torch.no_grad()
    def __call__(self, out: torch.Tensor) -> tuple[float, float, float, float]:
        """(style_ratio, content_dist, palette_dist, grid_score) of float (1, 3, H, W) 0–255, rounded
        to 8 bits first (as written to a file)."""
        out = out.float().round().clamp(0, 255)
        arr = out[0].permute(1, 2, 0).to(torch.uint8).cpu().numpy()
        if out.shape[-2:] != self.photo.shape[-2:]:
            out = torch.nn.functional.interpolate(out, size=self.photo.shape[-2:], mode="bilinear")
        fo = self.vgg(out.to(self.dev))
        ratio = self._gram_loss(fo) / self.base
        dist = ((fo.relu3_3 - self.fp.relu3_3).norm() / self.fp.relu3_3.norm()).item()
        q = np.linspace(0, 1, 101)
        a = _palette_pixels(Image.fromarray(arr)) @ _DIRECTIONS
        pal = float(np.abs(np.quantile(a, q, axis=0) - np.quantile(self.palette, q, axis=0)).mean())
        return ratio, dist, pal, grid_score_rgb(arr)


def evaluate(stylize, photos: list[Path], paintings: list[Path], metric_vgg: str | Path,
             device: str = "cpu", save_dir: Path | None = None) -> list[PairScore]:
    """stylize(photo float (1,3,H,W) 0–255, painting path) → output; every photo × painting."""
    vgg = load_vgg16(metric_vgg, device)
    scores = []
    for painting in paintings:
        style = load_scaled(painting)
        for photo in photos:
            x = load_scaled(photo)
            out = stylize(x, painting).round().clamp(0, 255)   # as written to an 8-bit file
            if save_dir is not None:
                save_dir.mkdir(parents=True, exist_ok=True)
                arr = out[0].permute(1, 2, 0).to(torch.uint8).numpy()
                Image.fromarray(arr).save(save_dir / f"{Path(photo).stem}__{Path(painting).stem}.png")
            scores.append(PairScore(Path(photo).name, Path(painting).name, *PairScorer(vgg, x, painting, style)(out)))
    return scores


def summary(scores: list[PairScore]) -> tuple[float, float]:
    return (statistics.median(s.style_ratio for s in scores), statistics.median(s.content_dist for s in scores))
