"""Training data: the content photos decoded once into one uint8 tensor, batches drawn on device.

Johnson et al. train on COCO through a DataLoader; here the whole set (1450 × 3 × 256² = 285 MB)
is decoded once and, when it fits, kept on the GPU, so a batch is one `index_select` and the
training loop never waits on the host. The order is a fresh permutation per epoch from a
generator seeded with (seed, epoch): a batch depends only on the step number, so a resumed run
draws exactly the batches the uninterrupted run would have, with no generator state to save.
This module also loads the style painting. It does no augmentation beyond the one crop.
"""
from __future__ import annotations

import logging
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from PIL import Image

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp"}
GPU_SHARE = 0.25        # keep the photos on the GPU when they take at most this share of free memory


def list_images(folder: str | Path) -> list[Path]:
    return sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)


def _square_crop(path: Path, size: int, rng: random.Random) -> np.ndarray | None:
    """Shorter side → size (area filter), then a random size×size crop: (size, size, 3) uint8."""
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            scale = size / min(im.size)
            if scale != 1.0:
                new = (max(size, round(im.width * scale)), max(size, round(im.height * scale)))
                im = im.resize(new, Image.Resampling.BICUBIC, reducing_gap=3.0)
            left = rng.randint(0, im.width - size)
            top = rng.randint(0, im.height - size)
            return np.asarray(im.crop((left, top, left + size, top + size)))
    except (OSError, ValueError) as exc:
        log.warning("skipping unreadable photo %s (%s)", path, exc)
        return None


def load_content(folder: str | Path, image_size: int, seed: int = 0,
                 limit: int | None = None, workers: int = 8) -> torch.Tensor:
    """Every photo of `folder` as one uint8 tensor (N, 3, image_size, image_size) on the CPU."""
    paths = list_images(folder)[:limit]
    if not paths:
        raise FileNotFoundError(f"no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in {folder}")
    # One RNG per photo, seeded by its index: the crops do not depend on thread scheduling.
    jobs = [(p, image_size, random.Random(seed * 1_000_003 + i)) for i, p in enumerate(paths)]
    with ThreadPoolExecutor(max_workers=workers) as pool:   # PIL decodes without the GIL
        arrays = [a for a in pool.map(lambda job: _square_crop(*job), jobs) if a is not None]
    if not arrays:
        raise FileNotFoundError(f"none of the {len(paths)} images in {folder} could be read")
    return torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).contiguous()


def load_style_image(path: str | Path, style_size: int | None) -> torch.Tensor:
    """The painting as float (1, 3, H, W) in 0–255, longer side = style_size (None: as is)."""
    with Image.open(path) as im:
        im = im.convert("RGB")
        if style_size is not None and max(im.size) != style_size:
            scale = style_size / max(im.size)
            im = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))),
                           Image.Resampling.BICUBIC, reducing_gap=3.0)
        array = np.asarray(im, dtype=np.float32)
    return torch.from_numpy(array.copy()).permute(2, 0, 1).unsqueeze(0)


def place(images: torch.Tensor, device: torch.device) -> torch.Tensor:
    """On the GPU when it fits comfortably, else in pinned host memory (copied per batch)."""
    if device.type != "cuda":
        return images
    free, _ = torch.cuda.mem_get_info(device)
    if images.numel() <= GPU_SHARE * free:
        return images.to(device)
    log.info("content set (%.0f MB) kept in pinned host memory", images.numel() / 2**20)
    return images.pin_memory()


class ContentBatches:
    """batch(step) → uint8 (B, 3, S, S) on `device`; a pure function of (seed, step)."""

    def __init__(self, images: torch.Tensor, batch_size: int, seed: int, device: torch.device):
        self.images = images
        self.batch_size = batch_size
        self.seed = seed
        self.device = device
        self.steps_per_epoch = max(1, len(images) // batch_size)   # the ragged tail is dropped
        self._epoch = -1
        self._order: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.images)

    def _permutation(self, epoch: int) -> torch.Tensor:
        where = self.images.device
        generator = torch.Generator(device=where)
        generator.manual_seed(self.seed * 1_000_003 + epoch)
        need = self.steps_per_epoch * self.batch_size
        parts, have = [], 0
        while have < need:          # a set smaller than one batch is drawn from several times
            parts.append(torch.randperm(len(self.images), generator=generator, device=where))
            have += len(self.images)
        return torch.cat(parts)[:need]

    def batch(self, step: int) -> torch.Tensor:
        epoch, index = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            self._order, self._epoch = self._permutation(epoch), epoch
        rows = self._order[index * self.batch_size:(index + 1) * self.batch_size]
        out = self.images.index_select(0, rows)
        return out.to(self.device, non_blocking=True)
