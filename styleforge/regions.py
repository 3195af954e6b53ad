"""Looks and regions: one or two styles applied to the parts of an image a mask selects.

A `Look` is what a user picks in an interactive front end: a built-in style, or a weight-space
blend of two, with strength and colour preservation. `stylize_regions` applies one look inside
a mask and another (or the untouched photo) outside it, feathering the seam. The network always
comes from the API's shared `Stylizer` cache keyed by the weights and the device only, so moving a
strength slider or a mask never reloads a model; strength and colour are applied afterwards with
the engine's own functions (`engine.blending`), in the order `Stylizer` applies them.

Not here: reading files or decoding uploads (`io.image`), the web UI (`styleforge.app`).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image, ImageFilter

from .api import get_stylizer
from .engine.blending import apply_strength, preserve_color
from .engine.options import StylizeOptions, check_fraction
from .engine.pipeline import Stylizer
from .io.image import pil_to_tensor, split_alpha, tensor_to_pil

# Only one thread builds a Stylizer at a time: two first requests for a style load it once.
_BUILD_LOCK = threading.Lock()


@dataclass(frozen=True)
class Look:
    style: str                      # a built-in style name
    blend_with: str | None = None   # a second style, mixed in weight space
    blend: float = 0.0              # share of `blend_with` (0 = only `style`)
    strength: float = 1.0
    preserve_color: bool = False

    def __post_init__(self):
        check_fraction("blend", self.blend)
        check_fraction("strength", self.strength)

    def weights_options(self, device: str = "auto", precision: str = "auto",
                        backend: str = "auto") -> StylizeOptions:
        """The options naming only the network (style or blend) and where it runs."""
        common = dict(device=device, precision=precision, backend=backend)
        if self.blend_with and self.blend_with != self.style and self.blend > 0.0:
            if self.blend >= 1.0:
                return StylizeOptions(style=self.blend_with, **common)
            return StylizeOptions(blend=((self.style, round(1.0 - self.blend, 4)),
                                         (self.blend_with, round(self.blend, 4))), **common)
        return StylizeOptions(style=self.style, **common)


@dataclass
class RegionsResult:
    image: Image.Image      # same size as the input; RGBA when the input had alpha
    seconds: float          # wall time of the network runs (device-synchronised)
    engine: str             # e.g. "candy on cpu (torch.float32, reference)"


def shared_stylizer(options: StylizeOptions) -> Stylizer:
    with _BUILD_LOCK:
        return get_stylizer(options)


def _apply(look: Look, content: torch.Tensor, device: str, precision: str,
           backend: str) -> tuple[torch.Tensor, Stylizer]:
    """content (1, 3, H, W) float 0–255 → the look's output, same shape, on the CPU."""
    stylizer = shared_stylizer(look.weights_options(device, precision, backend))
    out = stylizer(content)
    if look.preserve_color:
        out = preserve_color(content, out)
    return apply_strength(content, out, look.strength), stylizer


def mask_weights(mask: Image.Image | np.ndarray, size: tuple[int, int],
                 feather: float = 2.0) -> torch.Tensor:
    """Any mask (non-zero = inside) → (1, 1, H, W) float weights in [0, 1] at `size` (W, H)."""
    if isinstance(mask, np.ndarray):
        mask = Image.fromarray((np.asarray(mask) > 0).astype(np.uint8) * 255)
    grey = mask.convert("L").point(lambda v: 255 if v > 0 else 0)
    if grey.size != size:
        grey = grey.resize(size, Image.NEAREST)
    if feather > 0:
        grey = grey.filter(ImageFilter.GaussianBlur(feather))
    weights = torch.from_numpy(np.asarray(grey, dtype=np.float32) / 255.0)
    return weights[None, None]


def stylize_regions(image: Image.Image, inside: Look, *, mask: Image.Image | np.ndarray | None = None,
                    outside: Look | None = None, device: str = "auto", precision: str = "auto",
                    backend: str = "auto", feather: float = 2.0) -> RegionsResult:
    """`inside` where the mask is set (everywhere when `mask` is None), `outside` elsewhere
    (None: the photo unchanged). Alpha is kept; output size equals input size."""
    rgb, alpha = split_alpha(image)
    content = pil_to_tensor(rgb)
    start = time.perf_counter()
    styled, stylizer = _apply(inside, content, device, precision, backend)
    engine = stylizer.describe()
    if mask is not None:
        other = content
        if outside is not None:
            other, second = _apply(outside, content, device, precision, backend)
            engine = f"{engine}; outside: {second.describe()}"
        weights = mask_weights(mask, rgb.size, feather)
        styled = torch.lerp(other, styled, weights)
    seconds = time.perf_counter() - start
    out = tensor_to_pil(styled[0])
    if alpha is not None:
        out = out.convert("RGBA")
        out.putalpha(alpha)
    return RegionsResult(out, seconds, engine)
