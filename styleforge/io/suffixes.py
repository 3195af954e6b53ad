"""The image file suffixes a folder scan picks up, apart from `io.image` so that planning jobs
(`jobs.plan`, `jobs.naming`) imports neither torch nor Pillow: a one-photo CUDA run starts the
driver between planning and the torch import (`engine.cuda_warmup`). An explicitly named file may
have any suffix; `io.image` reads whatever Pillow opens."""
from __future__ import annotations

SCAN_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff", ".gif",
                           ".ppm", ".pgm", ".pbm", ".pnm", ".tga", ".jp2", ".j2k"})
