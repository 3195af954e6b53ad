"""The Python API: `stylize`, `load_style`, `list_styles`. The CLI is a thin layer over this.

`stylize` returns the kind of image it was given:

| input                              | output                                                    |
|------------------------------------|-----------------------------------------------------------|
| path (str / os.PathLike)           | PIL image (RGB, or RGBA when the file has alpha); nothing is written |
| PIL image, any mode                | PIL image: RGBA/LA/PA/transparent palette → RGBA, every other mode → RGB |
| numpy (H, W) or (H, W, C), C∈1,3,4 | numpy (H, W, 3), or (H, W, 4) with the alpha kept; uint8 → uint8 0–255, float → same float dtype in [0, 1] |
| torch (C, H, W) or (N, C, H, W)    | same layout with C = 3 (or 4, alpha kept), same device; uint8 → uint8 0–255, float → same dtype in [0, 1] |

Grey inputs come back as RGB because a style adds colour. Paths get their EXIF orientation
applied; PIL images, arrays and tensors are taken as they are. `max_side` resizes paths and PIL
images only: arrays and tensors keep their shape. Style precedence: blend > checkpoint > style.
Loaded `Stylizer`s are cached per options (an LRU of a few), so repeated calls do not reload
weights; `clear_cache()` frees them.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from .engine.options import StylizeOptions
from .engine.pipeline import Stylizer
from .io.image import LoadedImage, load_image, pil_to_tensor, split_alpha, tensor_to_pil
from .models import registry
from .models.checkpoint import build_model
from .models.transformer_net import TransformerNet

# Fields that change how files are read or written, not what the engine computes.
_IO_FIELDS = ("overwrite", "quality", "max_side", "max_pixels", "batch_size")
_DEFAULTS = StylizeOptions()


def make_options(style: str | os.PathLike | None = None, options: StylizeOptions | None = None,
                 **option_fields: Any) -> StylizeOptions:
    """`options` (or the defaults) with `style` and any named fields replaced, validated."""
    if style is not None:
        option_fields["style"] = os.fspath(style)
    base = options or _DEFAULTS
    return dataclasses.replace(base, **option_fields) if option_fields else base


@functools.lru_cache(maxsize=4)
def _cached_stylizer(engine_options: StylizeOptions, styles_dir: Path) -> Stylizer:
    # styles_dir is part of the key only: the same name may mean another file in another folder.
    return Stylizer(engine_options)


def get_stylizer(options: StylizeOptions) -> Stylizer:
    """The (cached) engine for these options; I/O-only fields do not make a new one."""
    key = dataclasses.replace(options, **{f: getattr(_DEFAULTS, f) for f in _IO_FIELDS})
    return _cached_stylizer(key, registry.current_styles_dir())


def clear_cache() -> None:
    _cached_stylizer.cache_clear()


def run_batches(stylizer: Stylizer, images: torch.Tensor, batch_size: int) -> torch.Tensor:
    """float (N, 3, H, W) in 0–255 → the same, `batch_size` images at a time."""
    return torch.cat([stylizer(chunk) for chunk in images.split(batch_size)])


def stylize(image: Any, style: str | os.PathLike | None = None, *,
            options: StylizeOptions | None = None, **option_fields: Any) -> Any:
    """Stylize a path, PIL image, numpy array or torch tensor; returns the same kind (see above).

    `style` is a built-in name or a checkpoint path (None: the default style); any
    `StylizeOptions` field may be given by name, e.g. `strength=0.7, device="cpu"`.
    """
    opts = make_options(style, options, **option_fields)
    if isinstance(image, (str, os.PathLike)):
        stylizer = get_stylizer(opts)   # refuses, from the header alone, what the budget cannot run
        return _stylize_loaded(load_image(image, opts.max_pixels, opts.max_side, check=stylizer.check_size), opts)
    if isinstance(image, Image.Image):
        rgb, alpha = split_alpha(image)
        return _stylize_loaded(LoadedImage(rgb, alpha, image.mode), opts)
    if isinstance(image, np.ndarray):
        return _stylize_array(image, opts)
    if isinstance(image, torch.Tensor):
        return _stylize_tensor(image, opts)
    raise TypeError(f"stylize() takes a path, PIL image, numpy array or torch tensor, "
                    f"not {type(image).__name__}")


def _stylize_loaded(loaded: LoadedImage, opts: StylizeOptions) -> Image.Image:
    loaded = loaded.resized(opts.max_side)
    out = get_stylizer(opts)(pil_to_tensor(loaded.rgb))
    return loaded.merged(tensor_to_pil(out))


def _stylize_array(array: np.ndarray, opts: StylizeOptions) -> np.ndarray:
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3:
        raise ValueError(f"expected an (H, W) or (H, W, C) array, got shape {array.shape}")
    out = _stylize_tensor(torch.tensor(array).permute(2, 0, 1), opts)  # copy: may be read-only
    return out.permute(1, 2, 0).numpy()


def _stylize_tensor(tensor: torch.Tensor, opts: StylizeOptions) -> torch.Tensor:
    if tensor.dim() not in (3, 4) or tensor.shape[-3] not in (1, 3, 4):
        raise ValueError("expected a (C, H, W) or (N, C, H, W) tensor with C in 1, 3, 4, "
                         f"got shape {tuple(tensor.shape)}")
    if tensor.dtype == torch.uint8:
        scale = 1.0
    elif tensor.dtype.is_floating_point:
        scale = 255.0
    else:
        raise TypeError(f"expected a uint8 or floating-point tensor, got {tensor.dtype}")
    batch = tensor if tensor.dim() == 4 else tensor.unsqueeze(0)
    colour, alpha = batch[:, :3], (batch[:, 3:] if batch.shape[1] == 4 else None)
    content = colour.detach().cpu().float() * scale
    if content.shape[1] == 1:
        content = content.expand(-1, 3, -1, -1)
    out = run_batches(get_stylizer(opts), content, opts.batch_size)
    if tensor.dtype == torch.uint8:
        out = out.round().clamp(0, 255).to(torch.uint8)
    else:
        out = (out / 255.0).to(tensor.dtype)
    out = out.to(tensor.device)
    if alpha is not None:
        out = torch.cat([out, alpha.detach()], dim=1)
    return out if tensor.dim() == 4 else out[0]


def load_style(name_or_path: str | os.PathLike) -> TransformerNet:
    """A built-in style name or checkpoint path → the network (CPU, float32, eval mode).

    The checkpoint's metadata (painting, artist, licence, training settings) is in
    `styleforge.models.registry.load_style(name).metadata`.
    """
    return build_model(registry.load_style(os.fspath(name_or_path)))


def list_styles() -> list[registry.StyleInfo]:
    """The built-in styles (name, path, painting, artist, licence), sorted by name."""
    return registry.list_styles()
