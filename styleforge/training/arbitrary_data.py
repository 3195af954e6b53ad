"""Training data of the arbitrary-style model: photos and paintings decoded once, batches drawn
on the device as a pure function of (seed, rank, step), so a resumed run draws the same batches.

Photos: every image of the content folder, centre-cropped square at `content_size` (uint8, one
tensor); a batch takes random `image_size` crops with random horizontal flips. Paintings: every
image of the style folders, longer side at most `style_size` (uint8, one tensor each). Paintings
are sampled by SOURCE GROUP, not uniformly: `styles_extra` is ~72 % fantasy portraits from one
game, which would otherwise teach one look. A group is the painting's sub-folder, or for files
directly in a style folder the file-name stem without its trailing number (`wesnoth-data_0012`
→ `wesnoth-data`); group probabilities ∝ count^`group_power` (0.5: big groups count, but less).
Painting augmentation: a random square crop of 35–100 % of the shorter side resized to
`image_size` (scale), flips, a mild brightness/contrast/saturation jitter and, when `hue_jitter`
is set, a turn of the hue (chroma rotated in YIQ). The model's style input and every loss's
target are the SAME augmented painting, so the jitter widens the palettes seen without teaching
the model to ignore them (a jitter of the target alone would).
"""
from __future__ import annotations

import logging
import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp"}
_TRAILING_NUMBER = re.compile(r"^(.*?)[_\-. ]*\d+$")
JITTER = 0.1            # ± brightness, contrast, saturation
MIN_CROP = 0.35         # smallest painting crop, as a share of its shorter side


def image_files(folder: str | Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def style_group(path: Path, root: Path) -> str:
    rel = path.relative_to(root)
    if len(rel.parts) > 1:
        return f"{root.name}/{rel.parts[0]}"
    match = _TRAILING_NUMBER.match(path.stem)
    return f"{root.name}/{match.group(1) if match and match.group(1) else path.stem}"


def _decode(path: Path, square: int | None, max_side: int | None) -> np.ndarray | None:
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if square is not None:
                side = min(im.size)
                left, top = (im.width - side) // 2, (im.height - side) // 2
                im = im.crop((left, top, left + side, top + side))
                im = im.resize((square, square), Image.Resampling.BICUBIC, reducing_gap=3.0)
            elif max_side is not None and max(im.size) > max_side:
                im.thumbnail((max_side, max_side), Image.Resampling.BICUBIC)
            return np.asarray(im).copy()
    except (OSError, ValueError) as exc:
        log.warning("skipping unreadable image %s (%s)", path, exc)
        return None


def load_photos(folder: str | Path, content_size: int, limit: int | None = None) -> torch.Tensor:
    """uint8 (N, 3, content_size, content_size), centre squares of every photo in `folder`."""
    paths = image_files(folder)[:limit]
    with ThreadPoolExecutor(max_workers=8) as pool:
        arrays = [a for a in pool.map(lambda p: _decode(p, content_size, None), paths) if a is not None]
    if not arrays:
        raise FileNotFoundError(f"no readable photos in {folder}")
    return torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).contiguous()


def load_paintings(folders: list[str | Path], style_size: int,
                   exclude: tuple[str, ...] = ()) -> tuple[list[torch.Tensor], list[str]]:
    """([uint8 (3, H, W)], [group]) for every painting whose stem does not start with `exclude`."""
    jobs = []
    for folder in folders:
        root = Path(folder)
        for path in image_files(root):
            if not any(path.stem.startswith(prefix) for prefix in exclude):
                jobs.append((path, style_group(path, root)))
    with ThreadPoolExecutor(max_workers=8) as pool:
        arrays = list(pool.map(lambda job: _decode(job[0], None, style_size), jobs))
    images, groups = [], []
    for array, (_, group) in zip(arrays, jobs):
        if array is not None and min(array.shape[:2]) >= 32:
            images.append(torch.from_numpy(array).permute(2, 0, 1).contiguous())
            groups.append(group)
    if not images:
        raise FileNotFoundError(f"no readable paintings in {', '.join(map(str, folders))}")
    return images, groups


def group_probabilities(groups: list[str], power: float) -> tuple[list[str], torch.Tensor, dict[str, list[int]]]:
    members: dict[str, list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        members[group].append(i)
    names = sorted(members)
    weights = torch.tensor([len(members[n]) ** power for n in names], dtype=torch.float64)
    return names, weights / weights.sum(), dict(members)


_RGB_TO_YIQ = torch.tensor([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]],
                           dtype=torch.float64)


def hue_matrix(angle: float) -> torch.Tensor:
    """(3, 3) RGB → RGB: the chroma (I, Q) turned by `angle` radians, luma kept."""
    c, s = torch.cos(torch.tensor(angle, dtype=torch.float64)), torch.sin(torch.tensor(angle, dtype=torch.float64))
    turn = torch.tensor([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]], dtype=torch.float64)
    return torch.linalg.inv(_RGB_TO_YIQ) @ turn @ _RGB_TO_YIQ


def _jitter(x: torch.Tensor, factors: torch.Tensor, hue: float = 0.0) -> torch.Tensor:
    """x (3, H, W) float 0–255; factors (3,) brightness, contrast, saturation multipliers; hue in
    radians."""
    x = x * factors[0]
    x = (x - x.mean()) * factors[1] + x.mean()
    grey = (0.299 * x[0] + 0.587 * x[1] + 0.114 * x[2]).unsqueeze(0)
    x = (x - grey) * factors[2] + grey
    if hue:
        x = torch.einsum("ij,jhw->ihw", hue_matrix(hue).to(x.device, x.dtype), x)
    return x.clamp(0, 255)


class ArbitraryBatches:
    """batch(step) → (photos, paintings), float (B, 3, S, S) 0–255 on `device`; pure in step."""

    def __init__(self, photos: torch.Tensor, paintings: list[torch.Tensor], groups: list[str],
                 batch_size: int, image_size: int, seed: int, rank: int = 0,
                 group_power: float = 0.5, device: torch.device | str = "cpu", hue_jitter: float = 0.0):
        if photos.shape[-1] < image_size or photos.shape[-2] < image_size:
            raise ValueError(f"photos are {tuple(photos.shape[-2:])}, smaller than image_size {image_size}")
        self.device = torch.device(device)
        self.photos = photos.to(self.device)
        self.paintings = [p.to(self.device) for p in paintings]
        self.group_names, self.group_probs, self.members = group_probabilities(groups, group_power)
        self.batch_size, self.image_size, self.seed, self.rank = batch_size, image_size, seed, rank
        self.hue_jitter = hue_jitter

    def describe(self) -> str:
        top = sorted(zip(self.group_probs.tolist(), self.group_names), reverse=True)[:4]
        return (f"{len(self.photos)} photos, {len(self.paintings)} paintings in {len(self.group_names)} groups "
                f"(most drawn: {', '.join(f'{n} {p:.0%}' for p, n in top)})")

    def _generator(self, step: int) -> torch.Generator:
        g = torch.Generator()
        g.manual_seed((self.seed * 1_000_003 + self.rank) * 10_000_019 + step)
        return g

    def _painting_crop(self, image: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        _, h, w = image.shape
        u = torch.rand(6, generator=g, dtype=torch.float64).tolist()
        side = max(16, round(min(h, w) * (MIN_CROP + (1 - MIN_CROP) * u[0])))
        top, left = round((h - side) * u[1]), round((w - side) * u[2])
        crop = image[:, top:top + side, left:left + side].float().unsqueeze(0)
        crop = F.interpolate(crop, size=(self.image_size, self.image_size), mode="bilinear",
                             antialias=side > self.image_size, align_corners=False)[0]
        if u[3] < 0.5:
            crop = crop.flip(-1)
        factors = 1 + JITTER * (2 * torch.rand(3, generator=g, dtype=torch.float64) - 1)
        hue = 0.0
        if self.hue_jitter:
            hue = self.hue_jitter * (2 * float(torch.rand(1, generator=g, dtype=torch.float64)) - 1)
        return _jitter(crop, factors.to(crop.device, crop.dtype), hue)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = self._generator(step)
        b, s = self.batch_size, self.image_size
        n, _, ph, pw = self.photos.shape
        idx = torch.randint(n, (b,), generator=g).tolist()
        tops = torch.randint(ph - s + 1, (b,), generator=g).tolist()
        lefts = torch.randint(pw - s + 1, (b,), generator=g).tolist()
        flips = (torch.rand(b, generator=g) < 0.5).tolist()
        photos = []
        for i, t, l, f in zip(idx, tops, lefts, flips):
            crop = self.photos[i, :, t:t + s, l:l + s]
            photos.append(crop.flip(-1) if f else crop)
        groups = torch.multinomial(self.group_probs, b, replacement=True, generator=g).tolist()
        paintings = []
        for group in groups:
            members = self.members[self.group_names[group]]
            pick = members[int(torch.randint(len(members), (1,), generator=g))]
            paintings.append(self._painting_crop(self.paintings[pick], g))
        return torch.stack(photos).float(), torch.stack(paintings)
