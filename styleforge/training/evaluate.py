"""Held-out quality numbers for trained styles: how close the output's style is to the painting's.

For each style and each held-out photo (the shipped assets, never trained on) we measure the
Johnson et al. style loss — Σ over relu1_2…relu4_3 of the mean squared difference between Gram
matrices (C·H·W-normalised, as in training) — of the stylized photo against the painting, and
divide it by the same loss of the unstylized photo. A ratio below 1 means the output is closer
to the painting than the photo was; well-trained styles land far below 1. As a check that the
photo stays recognisable, `content_change` is the relu2_2 feature change relative to the
photo's own features (0 = unchanged). The painting is seen at the style size it was trained with
(read from the weights' metadata). Stylization runs through the engine in fp32 (reference
backend), so the numbers do not depend on kernels or precision. Not a perceptual study.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..engine.options import StylizeOptions
from ..engine.pipeline import Stylizer
from ..models.checkpoint import load_checkpoint
from ..models.vgg import VGG16Features
from .data import load_style_image
from .losses import CONTENT_LAYER, style_distance, style_targets
from .samples import load_photos

DEFAULT_STYLE_SIZE = 512


@dataclass
class Score:
    style: str
    photo: str
    photo_loss: float          # style loss of the unstylized photo
    stylized_loss: float       # style loss of the stylized photo
    ratio: float               # stylized / photo: < 1 is closer to the painting
    content_change: float      # ‖φ(out) − φ(photo)‖² / ‖φ(photo)‖² at relu2_2


def trained_style_size(checkpoint_path: str | Path) -> int | None:
    settings = load_checkpoint(checkpoint_path).training_settings()
    return settings.get("style_size", DEFAULT_STYLE_SIZE)


@torch.no_grad()
def evaluate_style(name: str, checkpoint_path: str | Path, painting_path: str | Path,
                   photo_paths: list[Path], vgg: VGG16Features, device: str = "auto",
                   style_size: int | None | str = "trained") -> list[Score]:
    """Scores of one style on every photo. style_size "trained" = as recorded in the weights."""
    if style_size == "trained":
        style_size = trained_style_size(checkpoint_path)
    stylizer = Stylizer(StylizeOptions(checkpoint=str(checkpoint_path), device=device,
                                       precision="fp32", backend="reference"))
    where = next(vgg.parameters()).device
    targets = style_targets(vgg, load_style_image(painting_path, style_size))
    scores = []
    for path, photo in zip(photo_paths, load_photos(photo_paths)):
        photo = photo.to(where)
        stylized = stylizer(photo).to(where)
        both = torch.cat([photo, stylized])
        before, after = style_distance(vgg, both, targets).tolist()
        feats = getattr(vgg(both.to(next(vgg.parameters()).dtype), last=CONTENT_LAYER), CONTENT_LAYER).float()
        change = float((feats[1] - feats[0]).pow(2).sum() / feats[0].pow(2).sum().clamp_min(1e-12))
        scores.append(Score(name, Path(path).name, before, after, after / before, change))
    return scores


def summarise(scores: list[Score]) -> list[dict]:
    """Per style: geometric mean of the ratios (ratios multiply), mean content change."""
    by_style: dict[str, list[Score]] = {}
    for s in scores:
        by_style.setdefault(s.style, []).append(s)
    rows = []
    for style, group in by_style.items():
        geo = math.exp(sum(math.log(max(s.ratio, 1e-30)) for s in group) / len(group))
        rows.append({"style": style, "ratio": geo,
                     "content_change": sum(s.content_change for s in group) / len(group),
                     "photos": {s.photo: s.ratio for s in group}})
    return rows


def report(scores: list[Score]) -> dict:
    return {"scores": [asdict(s) for s in scores], "summary": summarise(scores)}


def print_table(scores: list[Score], console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    summary = summarise(scores)
    photos = sorted({s.photo for s in scores})
    table = Table(title="style loss of the output ÷ style loss of the photo (lower = closer to the painting)")
    table.add_column("style")
    for photo in photos:
        table.add_column(photo, justify="right")
    table.add_column("geo. mean", justify="right")
    table.add_column("content change", justify="right")
    for row in summary:
        cells = [f"{row['photos'][p]:.3f}" if p in row["photos"] else "–" for p in photos]
        table.add_row(row["style"], *cells, f"{row['ratio']:.3f}", f"{row['content_change']:.2f}")
    (console or Console()).print(table)
