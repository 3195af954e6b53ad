"""Any painting as the style: the app's one arbitrary-style engine, shared by every request.

The engine (`engine.arbitrary.ArbitraryStylizer`) comes from the API's cache once, on the first
painting request, under a lock, and the app keeps it; its LRU of style codes (keyed by the file's
bytes) means a painting is encoded once however many requests use it. Alpha and colour
preservation are passed per request (`bind(..., alpha=, preserve=)`), so a slider never
reloads the model. Runs hold the lock, since the code cache and the fused backend's
CUDA graphs are not thread-safe. Not here: checking uploads (`handlers.py`), the model itself.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from PIL import Image

from ..api import get_arbitrary_engine
from ..engine.checks import require_finite_output
from ..engine.options import StylizeOptions
from ..io.image import pil_to_tensor, split_alpha, tensor_to_pil
from ..regions import RegionsResult


class PaintingEngine:
    def __init__(self, device: str, precision: str, backend: str, max_pixels: int):
        self.options = StylizeOptions(device=device, precision=precision, backend=backend,
                                      max_pixels=max_pixels)   # max_pixels also bounds paintings
        self._engine = None
        self._lock = threading.Lock()

    def _shared(self):
        """The engine, loaded on first use; call with the lock held."""
        if self._engine is None:
            self._engine = get_arbitrary_engine(self.options)
        return self._engine

    def stylize(self, image: Image.Image, painting: Path, alpha: float,
                preserve_color: bool) -> RegionsResult:
        """`image` in the painting's style; alpha kept, same size. A bad painting raises the
        library's `ImageError` naming its path."""
        rgb, transparency = split_alpha(image)
        content = pil_to_tensor(rgb)
        with self._lock:
            start = time.perf_counter()
            bound = self._shared().bind([(str(painting), 1.0)], alpha=alpha, preserve=preserve_color)
            out = bound(content)
            seconds = time.perf_counter() - start
        require_finite_output(out, "the painting's style")
        result = tensor_to_pil(out[0])
        if transparency is not None:
            result = result.convert("RGBA")
            result.putalpha(transparency)
        return RegionsResult(result, seconds, bound.engine.describe())
