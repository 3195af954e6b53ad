"""The flags shared by the commands that stylize (`stylize`, `video`): the style, the engine,
the memory budgets and the media pipeline, each a field of `StylizeOptions` or
`PipelineOptions`. Parsing only: values are checked by the options' own rules, so a flag and a
Python argument fail alike. Not here: what a command does with them.
"""
from __future__ import annotations

import argparse
import dataclasses
import re

from ..engine.options import (
    BACKENDS,
    DEFAULT_STYLE,
    DEVICES,
    MODELS,
    PALETTE_MODES,
    PRECISIONS,
    TILINGS,
    StylizeOptions,
    parse_blend,
    parse_bytes,
    parse_stroke_scale,
    parse_style_image,
)

_DEFAULTS = StylizeOptions()


def _checked(convert, rule: str):
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError as exc:
            # argparse already names the flag; drop the library's own "--flag: " prefix.
            message = re.sub(r"^--[\w-]+: ", "", str(exc))
            raise argparse.ArgumentTypeError(message or f"{text!r}: {rule}") from None
        return value
    parse.__name__ = rule  # argparse names the type in its fallback messages
    return parse


def _number_in(low: float, high: float, kind=float):
    def convert(text: str):
        value = kind(text)
        if not low <= value <= high:
            raise ValueError(f"{text} is not in {low:g}..{high:g}")
        return value
    return convert


def add_pipeline_arguments(p, image_codec: bool = True) -> None:
    """The media pipeline's flags (fields of `styleforge.media.PipelineOptions`)."""
    from ..media.options import CODECS, PipelineOptions
    defaults = PipelineOptions()
    p.add_argument("--workers", type=_checked(_number_in(1, 1024, int), "positive integer"),
                   default=defaults.workers, metavar="N",
                   help="decode and encode threads each (default: one per CPU, at most 16)")
    p.add_argument("--queue-depth", type=_checked(_number_in(1, 4096, int), "positive integer"),
                   default=defaults.depth, metavar="N",
                   help="items queued between pipeline stages; bounds memory (default 16)")
    if image_codec:
        p.add_argument("--codec", choices=CODECS, default=defaults.codec,
                       help="image codec: auto (nvJPEG on CUDA where torchvision has it), pillow, gpu")


def register_engine_arguments(p) -> None:
    """The flags that choose and run the style (shared by `stylize` and `video`)."""
    which = p.add_mutually_exclusive_group()
    which.add_argument("--style", help=f"built-in style name or checkpoint path (default: {DEFAULT_STYLE})")
    which.add_argument("--checkpoint", metavar="PATH", help="a .safetensors or pytorch/examples .pth file")
    which.add_argument("--blend", type=_checked(parse_blend, "blend spec"), default=_DEFAULTS.blend,
                       metavar="SPEC", help="weight-space mix, e.g. candy:0.6,mosaic:0.4")
    which.add_argument("--style-image", dest="style_images", action="append", default=[],
                       type=_checked(parse_style_image, "painting[:weight]"), metavar="PAINTING[:W]",
                       help="any painting as the style (arbitrary model); repeat to mix, e.g. a.jpg:0.7")
    p.add_argument("--alpha", type=_checked(_number_in(0, 1), "number in 0..1"), default=_DEFAULTS.alpha,
                   help="--style-image: 0 = the photo's features, 1 = full style (default 1)")
    p.add_argument("--passes", type=_checked(_number_in(1, 4, int), "integer in 1..4"), default=_DEFAULTS.passes,
                   help=f"--style-image: apply the model this many times (default {_DEFAULTS.passes}: "
                        "the second pass deepens the painting's texture)")
    p.add_argument("--degrid", action=argparse.BooleanOptionalAction, default=_DEFAULTS.degrid,
                   help="--style-image: remove the 4-px lattice the model leaves, after each pass (default on)")
    p.add_argument("--palette", choices=PALETTE_MODES, default=_DEFAULTS.palette,
                   help="--style-image: move the colours to the painting's between passes (between), and "
                        "part of the way after the last (all, the default), or not at all (none)")
    p.add_argument("--palette-strength", type=_checked(_number_in(0, 1), "number in 0..1"),
                   default=_DEFAULTS.palette_strength, metavar="X",
                   help="--style-image with --palette all: how far the colours move after the last pass "
                        f"(default {_DEFAULTS.palette_strength:g}; 1 = the painting's palette exactly)")
    p.add_argument("--palette-target", type=_checked(_number_in(0, 255), "number in 0..255"),
                   default=_DEFAULTS.palette_target, metavar="D",
                   help="--style-image with --palette all: where the photo's colours stay farther than D "
                        "from the painting's (palette distance, 0-255), move them further, up to "
                        f"--palette-cap (default {_DEFAULTS.palette_target:g})")
    p.add_argument("--palette-cap", type=_checked(_number_in(0, 1), "number in 0..1"),
                   default=_DEFAULTS.palette_cap, metavar="X",
                   help="--style-image with --palette all: the most that share is raised to "
                        f"(default {_DEFAULTS.palette_cap:g}; at or below --palette-strength: a fixed share)")
    p.add_argument("--style-size", type=_checked(_number_in(64, 4096, int), "integer in 64..4096"),
                   default=_DEFAULTS.style_size, metavar="PX",
                   help=f"--style-image: the painting's longer side when encoded (default {_DEFAULTS.style_size})")
    p.add_argument("--arbitrary-weights", metavar="FILE", default=_DEFAULTS.arbitrary_weights,
                   help="--style-image: weights from `styleforge train-arbitrary` (default: the shipped ones)")
    p.add_argument("--strength", type=_checked(_number_in(0, 1), "number in 0..1"),
                   default=_DEFAULTS.strength, help="0 = the photo, 1 = full style (default 1)")
    p.add_argument("--preserve-color", "--preserve-colour", dest="preserve_color",
                   action="store_true", help="keep the photo's colours (luminance transfer)")
    p.add_argument("--device", choices=DEVICES, default=_DEFAULTS.device)
    p.add_argument("--precision", choices=PRECISIONS, default=_DEFAULTS.precision)
    p.add_argument("--backend", choices=BACKENDS, default=_DEFAULTS.backend,
                   help="auto: the fused CUDA engine on a GPU; on a CPU OpenVINO INT8 where it is "
                        "installed (styleforge[openvino]), else PyTorch")
    p.add_argument("--model", choices=MODELS, default=_DEFAULTS.model,
                   help="full (default) or slim: the style's half-width network distilled for CPUs")
    p.add_argument("--batch-size", type=_checked(_number_in(1, 1 << 16, int), "positive integer"),
                   default=_DEFAULTS.batch_size, metavar="N",
                   help="stylize N consecutive same-size images at once when they are decoded")
    size = p.add_argument_group("large images", "memory budgets, tiling and stroke size (docs/tiling.md)")
    size.add_argument("--stroke-scale", type=_checked(parse_stroke_scale, "number ≥ 1 or auto"),
                      default=_DEFAULTS.stroke_scale, metavar="S|auto",
                      help="brush strokes S times the network's native size; auto (default) keeps "
                           "the look of a 512-px result at any size, 1 = finest strokes")
    size.add_argument("--tiling", choices=TILINGS, default=_DEFAULTS.tiling,
                      help="auto (default): whole frame when it fits the budget, else exact tiles; "
                           "fast: tiles with thumbnail norm statistics (approximate, least memory)")
    size.add_argument("--max-memory", type=_checked(parse_bytes, "size such as 8G"),
                      default=_DEFAULTS.max_memory, metavar="SIZE",
                      help="CPU RAM budget, e.g. 8G (default: 30%% of RAM, at most what is free)")
    size.add_argument("--max-gpu-memory", type=_checked(parse_bytes, "size such as 8G"),
                      default=_DEFAULTS.max_gpu_memory, metavar="SIZE",
                      help="GPU memory budget, e.g. 8G (default: what the device has free)")
    size.add_argument("--scratch-dir", default=_DEFAULTS.scratch_dir, metavar="DIR",
                      help="where exact tiling spills activations that do not fit in RAM "
                           "(default: the temp folder)")


_PAINTING_ONLY = ("alpha", "passes", "style_size", "arbitrary_weights", "palette_strength", "palette_target",
                  "palette_cap")


def options_from_args(args: argparse.Namespace) -> StylizeOptions:
    """The command's flags as options; a field a command has no flag for keeps its default.
    The arbitrary model's flags without --style-image are an error, not silently ignored."""
    options = StylizeOptions(**{f.name: getattr(args, f.name, getattr(_DEFAULTS, f.name))
                                for f in dataclasses.fields(StylizeOptions)})
    if not options.style_images:
        given = [name for name in _PAINTING_ONLY if getattr(options, name) != getattr(_DEFAULTS, name)]
        if given:
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            verb = "is" if len(given) == 1 else "are"
            raise ValueError(f"{flags} {verb} for --style-image PAINTING (the arbitrary-style model) "
                             "only; a built-in style takes --strength")
    return options


def pipeline_options_from_args(args: argparse.Namespace):
    from ..media.options import PipelineOptions
    return PipelineOptions(workers=args.workers, depth=args.queue_depth, codec=args.codec)

