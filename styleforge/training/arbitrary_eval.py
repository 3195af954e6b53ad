"""Held-out quality of the arbitrary-style model, scored exactly as `shared/tools/style_metrics.py`.

style_ratio  = Σ_l ‖G_l(out) − G_l(painting)‖² / Σ_l ‖G_l(photo) − G_l(painting)‖², Gram matrices
               (divided by C·H·W) at relu1_2, relu2_2, relu3_3, relu4_3 of the zero-padded VGG16
               loss network (`models/vgg.py`, weights vgg16_relu4_3.fp16.pth), fp32.
content_dist = ‖relu3_3(out) − relu3_3(photo)‖ / ‖relu3_3(photo)‖.
Photo, output and painting are read as the tool reads them (PIL RGB, longest side shrunk to 512
px with bicubic resampling); the photo is stylized at that size. Medians over all pairs. The
model's own encoder is NOT the yardstick: the metric network is the one the issue names.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..models.vgg import VGG16Features, load_vgg16

SIZE = 512
LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")


@dataclass
class PairScore:
    photo: str
    painting: str
    style_ratio: float
    content_dist: float


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
            ratio, dist = metrics(vgg, x, out, style)
            scores.append(PairScore(Path(photo).name, Path(painting).name, ratio, dist))
    return scores


def summary(scores: list[PairScore]) -> tuple[float, float]:
    return (statistics.median(s.style_ratio for s in scores), statistics.median(s.content_dist for s in scores))


def table(scores: list[PairScore]) -> str:
    lines = [f"{'photo':<28} {'painting':<36} {'style_ratio':>11} {'content_dist':>12}"]
    lines += [f"{s.photo:<28} {s.painting:<36} {s.style_ratio:>11.3f} {s.content_dist:>12.3f}" for s in scores]
    ratio, dist = summary(scores)
    lines.append(f"{'median over ' + str(len(scores)) + ' pairs':<65} {ratio:>11.3f} {dist:>12.3f}")
    return "\n".join(lines)
