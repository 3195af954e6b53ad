"""The one options object shared by the CLI and the Python API (every CLI flag is a field).

Every field is checked here, whether it came from a flag or from Python, so a bad value fails
before any weights load (a NaN blend weight once gave an all-black image with exit 0).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

# The built-in style used when none is named; every built-in meets the quality bars
# (docs/training.md, "What ships").
DEFAULT_STYLE = "starry_night"
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "fp16", "bf16", "int8")
BACKENDS = ("auto", "reference", "fused", "compile", "openvino")
MODELS = ("full", "slim")
TILINGS = ("auto", "off", "exact", "fast")
# JPEG chroma sampling of written files. 444 keeps full colour resolution: Pillow's default 4:2:0
# halves it both ways and blurs the fine colour strokes a style paints (docs/media.md).
CHROMAS = ("444", "422", "420")
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


MAX_PASSES = 4


def check_fraction(name: str, value: float) -> float:
    """`value` if it is in [0, 1] (strength, alpha, blend shares), else a ValueError naming it."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value


def parse_bytes(text: str) -> int:
    """'8G', '512MiB', '1.5GB', '1000000' → bytes (binary units: 1G = 2**30)."""
    value = text.strip().lower()
    value = value[:-2] if value.endswith("ib") else value[:-1] if value.endswith("b") else value
    number, unit = value, ""
    if value and value[-1] in _UNITS:
        number, unit = value[:-1], value[-1]
    try:
        amount = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a size; write e.g. 8G, 512M or 1000000") from None
    if not amount >= 1 or amount == float("inf"):
        raise ValueError(f"{text!r}: a size must be at least one byte")
    return int(amount)


def parse_stroke_scale(text: str) -> float | None:
    """'auto' → None; otherwise a number ≥ 1 (1 = the network's native stroke size)."""
    if text.strip().lower() == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number or 'auto'") from None
    if not 1 <= value <= 1024:
        raise ValueError(f"{text} is not in 1..1024 (1 = native strokes, auto = sized to the image)")
    return value


MAX_BLEND_WEIGHT = 1e6   # weights are relative; anything larger is a typo, and 1e308 overflows the sum


def check_blend(items) -> tuple[tuple[str, float], ...]:
    """[(name, weight), …] → the same as a tuple, or ValueError naming the bad entry.

    Weights must be finite numbers in 0..MAX_BLEND_WEIGHT with a positive sum; they are
    normalised to sum to 1 when the weights are mixed.
    """
    out = []
    for item in items:
        try:
            name, weight = item
        except (TypeError, ValueError):
            raise ValueError(f"--blend: each entry must be (name, weight), got {item!r}") from None
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"--blend: style name must be a non-empty string, got {name!r}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ValueError(f"--blend: weight of {name!r} must be a number, got {weight!r}")
        weight = float(weight)
        if not math.isfinite(weight):
            raise ValueError(f"--blend: weight of {name!r} is {weight}; use a finite number, e.g. {name}:0.5")
        if weight < 0:
            raise ValueError(f"--blend: weight of {name!r} is negative ({weight:g}); weights are ≥ 0")
        if weight > MAX_BLEND_WEIGHT:
            raise ValueError(f"--blend: weight of {name!r} is {weight:g}, over {MAX_BLEND_WEIGHT:g}; "
                             "weights are relative, e.g. candy:0.6,mosaic:0.4")
        out.append((name.strip(), weight))
    if not out or sum(w for _, w in out) <= 0:
        raise ValueError("--blend needs at least one style with a positive weight, e.g. candy:0.6,mosaic:0.4")
    return tuple(out)


def parse_blend(spec: str) -> tuple[tuple[str, float], ...]:
    """'candy:0.6,mosaic:0.4' → (('candy', 0.6), ('mosaic', 0.4)); weights are normalised later."""
    items = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, weight = part.rpartition(":")
        if not sep:
            name, weight = part, "1"
        try:
            value = float(weight)
        except ValueError:
            raise ValueError(f"--blend: weight {weight!r} of {name!r} is not a number") from None
        items.append((name, value))
    return check_blend(items)


def check_style_weight(name: str, weight) -> float:
    """A painting's weight as a float, or ValueError: a finite number ≥ 0 (weights are relative;
    a negative one would extrapolate past the paintings, a NaN or inf would wash the image out)."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ValueError(f"--style-image: weight of {name!r} must be a number, got {weight!r}")
    weight = float(weight)
    if not math.isfinite(weight):
        raise ValueError(f"--style-image: weight of {name!r} is {weight}; use a finite number, e.g. {name}:0.5")
    if weight < 0:
        raise ValueError(f"--style-image: weight of {name!r} is negative ({weight:g}); weights are ≥ 0")
    return weight


def check_style_weights(weights) -> None:
    """ValueError unless the (already checked) weights have a positive total."""
    if not any(w > 0 for w in weights):
        raise ValueError("--style-image needs at least one painting with a positive weight, "
                         "e.g. a.jpg:0.7 --style-image b.jpg:0.3")


def parse_style_image(spec: str) -> tuple[str, float]:
    """'painting.jpg' → ('painting.jpg', 1.0); 'painting.jpg:0.3' → ('painting.jpg', 0.3)."""
    path, sep, weight = spec.rpartition(":")
    if not sep or not path or "/" in weight or "\\" in weight:
        return spec, 1.0
    try:
        value = float(weight)
    except ValueError:
        return spec, 1.0          # a colon inside the file name
    return path, check_style_weight(path, value)


# Arbitrary model: where the painting's colours are transported onto the image (docs/arbitrary.md):
# fully between the passes and, with `all` (the default), `palette_strength` of the way after the last.
PALETTE_MODES = ("none", "between", "all")


@dataclass(frozen=True)
class StylizeOptions:
    style: str | None = None          # built-in name or checkpoint path; None = the default style
    checkpoint: str | None = None     # explicit checkpoint path (wins over style)
    blend: tuple[tuple[str, float], ...] = ()  # weight-space mix of several styles
    strength: float = 1.0             # 0 = the photo, 1 = full stylization
    preserve_color: bool = False      # keep the photo's colours (luminance transfer)
    max_side: int | None = None       # downscale inputs whose longer side exceeds this
    device: str = "auto"
    precision: str = "auto"
    backend: str = "auto"
    model: str = "full"               # full | slim (half width, distilled; built-in styles' slim/ files)
    batch_size: int = 1
    overwrite: bool = False
    quality: int = 95                 # JPEG/WebP quality of written files
    chroma: str = "444"               # JPEG chroma sampling of written files: CHROMAS
    max_pixels: int = 200_000_000     # refuse larger images before decoding them (--max-pixels)
    tiling: str = "auto"              # auto | off | exact | fast (engine.memory picks for auto)
    max_memory: int | str | None = None  # CPU RAM budget in bytes or "8G"; None: a share of the free RAM
    max_gpu_memory: int | str | None = None  # GPU budget in bytes or "8G"; None: what the device has free
    stroke_scale: float | None = None  # ≥ 1: strokes that many times larger; None: auto (engine.stroke)
    scratch_dir: str | None = None    # where exact tiling spills activations; None: the temp dir
    style_images: tuple[tuple[str, float], ...] = ()  # paintings (path, weight): the arbitrary model
    alpha: float = 1.0                # arbitrary model: 0 = the photo's features, 1 = full style
    style_size: int = 512             # arbitrary model: a painting's longer side when encoded
    passes: int = 2                   # arbitrary model: times it is applied (the output restyled)
    arbitrary_weights: str | None = None  # arbitrary model weights file (None: the shipped one)
    degrid: bool = True               # arbitrary model: remove a 4-px lattice after each pass
    palette: str = "all"              # arbitrary model: painting-colour transport: none | between | all
    palette_strength: float = 0.25    # arbitrary model: share of the transport after the last pass (all)
    palette_target: float = 12.0      # arbitrary model: palette distance the last share is raised to reach
    palette_cap: float = 0.6          # arbitrary model: most that share is raised to (≤ strength: fixed)

    def __post_init__(self):
        check_fraction("strength", self.strength)
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1, got {self.batch_size}")
        if self.max_side is not None and self.max_side < 1:
            raise ValueError(f"max_side must be ≥ 1, got {self.max_side}")
        if self.max_pixels < 1:
            raise ValueError(f"max_pixels must be ≥ 1, got {self.max_pixels}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"quality must be in 1..100, got {self.quality}")
        if self.chroma not in CHROMAS:
            raise ValueError(f"chroma must be one of {CHROMAS}, got {self.chroma!r}")
        check_fraction("alpha", self.alpha)
        if not 1 <= self.passes <= MAX_PASSES:
            raise ValueError(f"passes must be in 1..{MAX_PASSES}, got {self.passes}")
        if self.style_size < 64:
            raise ValueError(f"style_size must be ≥ 64, got {self.style_size}")
        if self.palette not in PALETTE_MODES:
            raise ValueError(f"palette must be one of {PALETTE_MODES}, got {self.palette!r}")
        check_fraction("palette_strength", self.palette_strength)
        check_fraction("palette_cap", self.palette_cap)
        if not self.palette_target >= 0:
            raise ValueError(f"palette_target must be ≥ 0, got {self.palette_target}")
        if isinstance(self.style_images, str):
            object.__setattr__(self, "style_images", (parse_style_image(self.style_images),))
        elif isinstance(self.style_images, list):
            object.__setattr__(self, "style_images", tuple(tuple(item) for item in self.style_images))
        if self.style_images:
            object.__setattr__(self, "style_images", tuple(
                (path, check_style_weight(str(path), w)) for path, w in self.style_images))
            check_style_weights([w for _, w in self.style_images])
        if self.tiling not in TILINGS:
            raise ValueError(f"tiling must be one of {TILINGS}, got {self.tiling!r}")
        for name in ("max_memory", "max_gpu_memory"):
            if isinstance(getattr(self, name), str):     # "8G" as the flag takes it
                try:
                    object.__setattr__(self, name, parse_bytes(getattr(self, name)))
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be ≥ 1 byte, got {getattr(self, name)}")
        if self.scratch_dir is not None:   # else every image would fail later, as if corrupt
            if not os.path.isdir(self.scratch_dir):
                raise ValueError(f"--scratch-dir {self.scratch_dir}: no such folder; create it first")
            if not os.access(self.scratch_dir, os.W_OK | os.X_OK):
                raise ValueError(f"--scratch-dir {self.scratch_dir}: the folder is not writable")
        if self.stroke_scale is not None and not 1 <= self.stroke_scale <= 1024:
            raise ValueError(f"stroke_scale must be in 1..1024 or None (auto), got {self.stroke_scale}")
        if isinstance(self.blend, str):
            object.__setattr__(self, "blend", parse_blend(self.blend))
        elif self.blend:
            object.__setattr__(self, "blend", check_blend(self.blend))
