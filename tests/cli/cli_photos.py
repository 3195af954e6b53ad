"""Small random photos for the command-line tests: lossless, seeded, written where a test
asks (parent folders made). Not a fixture: tests call it with the names and sizes they need."""
from __future__ import annotations

import numpy as np
from PIL import Image


def write(path, size=(20, 16), seed=0):
    """An RGB image of uniform noise, `size` = (width, height), saved by its suffix; returns path."""
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path)
    return path
