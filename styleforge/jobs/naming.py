"""Output names: a deterministic function of the source name, the style and the settings.

`output_label(options)` is what goes after the underscore (`photo.jpg` → `photo_<label>.jpg`,
folder `trip/` → `trip_<label>/`): the style's label, then one short token per setting that
changes the picture and is not at its default, in a fixed order, each after a `-`:

| setting (default)                 | token           | example label           |
|-----------------------------------|-----------------|-------------------------|
| (none: every such setting default)| —               | `candy`                 |
| --blend / --style-image weights   | `w<w1>_<w2>…`   | `candy+mosaic-w0.6_0.4` |
|   (left out when all are equal)   |                 | `candy+mosaic`          |
| --strength (1)                    | `s<x>`          | `candy-s0.7`            |
| --preserve-color (off)            | `pc`            | `candy-pc`              |
| --model (full)                    | `slim`          | `candy-slim`            |
| --max-side (none)                 | `max<n>`        | `candy-max1024`         |
| --stroke-scale (auto)             | `x<s>`          | `candy-x2`              |
| --alpha (1), --passes (2)         | `a<x>`, `p<n>`  | `starry-a0.8-p1`        |
| --no-degrid, --palette (all)      | `nodegrid`, `pal<mode>` |                 |
| --palette-strength (0.25; all)   | `ps<x>`         | `starry-ps0.5`          |
| --palette-target, --palette-cap (all) | `pt<d>`, `pcap<x>` | `starry-pcap0.25` |
| --style-size (512)                | `ss<px>`        |                         |

So every default run keeps the names it always had, and two runs that would paint different
pictures no longer share a name (before, `--strength 0.5` after a full run skipped every file as
"exists", leaving the full-strength pictures under a name the user took for the half ones).

Not in the name, by decision: settings meant to give the same picture — device, precision,
backend, batch size, tiling and the memory budgets, codec and workers — (a name must not change
when a run moves to another GPU, or the exactly-once rule across `--gpus` and Ray breaks), and
the encoder settings --quality and --chroma, which re-encode the same picture (`--overwrite`
replaces it); and --arbitrary-weights, which picks the model file as a checkpoint path does
(a checkpoint is named by its stem alone, too). Numbers are written with `%g` (0.7, 0.25, 1024).

The rest is file-system care: a suffix Pillow cannot write becomes `.png`, and a name over
NAME_MAX bytes is shortened in its stem, never in the label or the suffix.
Not here: which files are inputs and where their outputs go (`jobs.plan`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..engine.options import StylizeOptions

NAME_MAX = 255                                   # bytes in one file name (ext4, APFS, NTFS)
_LOOKS_LIKE_SUFFIX = re.compile(r"^\.[A-Za-z][A-Za-z0-9]{0,4}$")
_DEFAULTS = StylizeOptions()


def style_label(options: StylizeOptions) -> str:
    """The style part of an output name: the style, checkpoint, blend or painting stems."""
    from ..models.registry import default_style
    if options.style_images:
        return "+".join(Path(name).stem for name, _ in options.style_images)
    if options.blend:
        return "+".join(Path(name).stem for name, _ in options.blend)
    if options.checkpoint:
        return Path(options.checkpoint).stem
    return Path(options.style).stem if options.style else default_style()


def _number(value: float) -> str:
    return f"{value:g}"


def _weights(pairs) -> str | None:
    """The mix's weights (normalised) when they differ; equal weights say nothing new."""
    weights = [w for _, w in pairs]
    if len(weights) < 2 or len(set(weights)) == 1:
        return None
    total = sum(weights)
    return "w" + "_".join(f"{w / total:.3g}" for w in weights)


def settings_tokens(options: StylizeOptions) -> list[str]:
    """The tokens for this run's non-default, picture-changing settings (table above)."""
    d = _DEFAULTS
    tokens = [_weights(options.style_images or options.blend)]
    tokens += [
        f"s{_number(options.strength)}" if options.strength != d.strength else None,
        "pc" if options.preserve_color else None,
        options.model if options.model != d.model else None,
        f"max{options.max_side}" if options.max_side is not None else None,
        f"x{_number(options.stroke_scale)}" if options.stroke_scale is not None else None,
    ]
    if options.style_images:      # the arbitrary model's settings mean nothing for a built-in style
        tokens += [
            f"a{_number(options.alpha)}" if options.alpha != d.alpha else None,
            f"p{options.passes}" if options.passes != d.passes else None,
            "nodegrid" if not options.degrid else None,
            f"pal{options.palette}" if options.palette != d.palette else None,
            f"ps{_number(options.palette_strength)}" if options.palette == "all"
            and options.palette_strength != d.palette_strength else None,
            f"pt{_number(options.palette_target)}" if options.palette == "all"
            and options.palette_target != d.palette_target else None,
            f"pcap{_number(options.palette_cap)}" if options.palette == "all"
            and options.palette_cap != d.palette_cap else None,
            f"ss{options.style_size}" if options.style_size != d.style_size else None,
        ]
    return [token for token in tokens if token]


def output_label(options: StylizeOptions) -> str:
    """`<style label>[-<token>…]`: what follows the `_` in every output name of this run."""
    return "-".join([style_label(options), *settings_tokens(options)])


def writable_name(name: str) -> str:
    """`name` with a suffix Pillow can write (else .png), its last part cut to fit NAME_MAX."""
    from ..io.image import ImageError, format_for
    try:
        format_for(name)
    except ImageError:
        name = str(Path(name).with_suffix(".png"))
    path = Path(name)
    over = len(path.name.encode()) - NAME_MAX
    if over > 0:
        stem = path.stem.encode()[:max(1, len(path.stem.encode()) - over)].decode(errors="ignore")
        path = path.with_name(stem + path.suffix)
    return str(path)


def styled_name(relative: str | os.PathLike, label: str) -> str:
    """photo.jpg → photo_<label>.jpg (sub/photo.jpg → sub/photo_<label>.jpg), the label kept
    whole when the name must be shortened."""
    relative = Path(relative)
    tail = f"_{label}{relative.suffix}"
    room = max(1, NAME_MAX - len(tail.encode()))
    stem = relative.stem.encode()[:room].decode(errors="ignore")
    return writable_name(str(relative.with_name(stem + tail)))


def output_kind(output: str | os.PathLike | None) -> str:
    """'none', 'file' or 'folder' for an -o value; ValueError for a name that is neither."""
    from ..io.suffixes import SCAN_SUFFIXES
    if output is None:
        return "none"
    output = os.fspath(output)
    path = Path(output)
    if path.is_dir() or output.endswith(("/", os.sep)):
        return "folder"
    suffix = path.suffix.lower()
    if suffix in SCAN_SUFFIXES:
        return "file"
    if suffix and _LOOKS_LIKE_SUFFIX.match(suffix):
        raise ValueError(f"-o {output}: {suffix} is not an image format StyleForge writes "
                         "(.jpg, .png, .webp, .tif, …); for a folder, end it with / or create it first")
    if path.exists():
        raise ValueError(f"-o {output} is an existing file, not a folder or an image name; "
                         "give an image file name (e.g. out.png) or a folder")
    return "folder"
