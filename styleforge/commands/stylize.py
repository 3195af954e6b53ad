"""`styleforge stylize INPUT... [-o OUT] [--style NAME | --checkpoint PATH | --blend SPEC]`.

Parses flags into one `StylizeOptions`, expands inputs, plans every output path, then streams the
images through the library's cached `Stylizer`. It is not the engine: padding, strength, colour
and precision live in `styleforge.engine`; reading and atomic writing in `styleforge.io.image`.

Where outputs go (no `-o`): a file `photo.jpg` → `photo_<style>.jpg` beside it; a folder
`trip/` → a sibling folder `trip_<style>/` with the same file names, so a second run never picks
up the first run's outputs. `-o x.jpg` (a name with an image suffix) is a file and needs exactly
one input; any other `-o` is a folder, created if needed, that keeps the input names. An input
whose suffix Pillow cannot write (e.g. `.psd`) is written as `.png`.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..engine.options import (
    BACKENDS,
    DEVICES,
    PRECISIONS,
    TILINGS,
    StylizeOptions,
    parse_blend,
    parse_bytes,
    parse_stroke_scale,
)

_DEFAULTS = StylizeOptions()
_GLOB_MAGIC = re.compile(r"[*?[]")


@dataclass
class Job:
    source: Path
    target: Path


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


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "stylize", help="apply a style to images",
        description="Apply a style to image files, folders or glob patterns.")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="image files, folders or glob patterns")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="output file (one input) or folder (default: beside each input)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--style", help="built-in style name or checkpoint path (default: candy)")
    which.add_argument("--checkpoint", metavar="PATH", help="a .safetensors or pytorch/examples .pth file")
    which.add_argument("--blend", type=_checked(parse_blend, "blend spec"), default=_DEFAULTS.blend,
                       metavar="SPEC", help="weight-space mix, e.g. candy:0.6,mosaic:0.4")
    p.add_argument("--strength", type=_checked(_number_in(0, 1), "number in 0..1"),
                   default=_DEFAULTS.strength, help="0 = the photo, 1 = full style (default 1)")
    p.add_argument("--preserve-color", "--preserve-colour", dest="preserve_color",
                   action="store_true", help="keep the photo's colours (luminance transfer)")
    p.add_argument("--max-side", type=_checked(_number_in(1, 1 << 30, int), "positive integer"),
                   default=_DEFAULTS.max_side, metavar="N", help="downscale so the longer side is ≤ N")
    p.add_argument("--device", choices=DEVICES, default=_DEFAULTS.device)
    p.add_argument("--precision", choices=PRECISIONS, default=_DEFAULTS.precision)
    p.add_argument("--backend", choices=BACKENDS, default=_DEFAULTS.backend)
    p.add_argument("--batch-size", type=_checked(_number_in(1, 1 << 16, int), "positive integer"),
                   default=_DEFAULTS.batch_size, metavar="N",
                   help="stylize up to N consecutive same-size images at once")
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs (default: skip)")
    p.add_argument("--quality", type=_checked(_number_in(1, 100, int), "integer in 1..100"),
                   default=_DEFAULTS.quality, help="JPEG/WebP quality (default 95)")
    p.add_argument("--max-pixels", type=_checked(_number_in(1, 1 << 62, int), "positive integer"),
                   default=_DEFAULTS.max_pixels, metavar="N",
                   help="refuse images with more pixels, before decoding them")
    p.add_argument("-r", "--recursive", action="store_true", help="descend into sub-folders")
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


def options_from_args(args: argparse.Namespace) -> StylizeOptions:
    return StylizeOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(StylizeOptions)})


def expand_inputs(inputs: list[str], recursive: bool) -> tuple[list[tuple[Path, Path | None]], list[str]]:
    """INPUT args → ([(file, the folder it was found in or None)], [error lines])."""
    from ..io.image import SCAN_SUFFIXES

    def scan(folder: Path) -> list[Path]:
        found = folder.rglob("*") if recursive else folder.iterdir()
        return sorted(p for p in found if p.is_file() and p.suffix.lower() in SCAN_SUFFIXES
                      and not any(part.startswith(".") for part in p.relative_to(folder).parts))

    files: list[tuple[Path, Path | None]] = []
    errors: list[str] = []
    for raw in inputs:
        path = Path(raw).expanduser()
        if path.is_dir():
            files += [(f, path) for f in scan(path)]
        elif path.exists():
            files.append((path, None))
        elif _GLOB_MAGIC.search(raw):  # the shell left the pattern alone (quoted, or Windows)
            matches = [Path(m) for m in sorted(glob.glob(os.path.expanduser(raw), recursive=recursive))]
            if not matches:
                errors.append(f"{raw}: no files match this pattern")
            for match in matches:
                files += [(f, match) for f in scan(match)] if match.is_dir() else [(match, None)]
        else:
            errors.append(f"{raw}: no such file or folder")
    seen: set[Path] = set()
    unique = []
    for source, root in files:
        if source.resolve() not in seen:
            seen.add(source.resolve())
            unique.append((source, root))
    return unique, errors


def style_label(options: StylizeOptions) -> str:
    from ..models.registry import default_style
    if options.blend:
        return "+".join(Path(name).stem for name, _ in options.blend)
    if options.checkpoint:
        return Path(options.checkpoint).stem
    return Path(options.style).stem if options.style else default_style()


def _writable_name(name: str) -> str:
    from ..io.image import ImageError, format_for
    try:
        format_for(name)
        return name
    except ImageError:
        return str(Path(name).with_suffix(".png"))


def plan_outputs(files: list[tuple[Path, Path | None]], output: str | None,
                 label: str) -> tuple[list[Job], list[str]]:
    """Each input's output path; collisions and outputs that would replace an input are errors."""
    from ..io.image import SCAN_SUFFIXES
    out_is_file = (output is not None and Path(output).suffix.lower() in SCAN_SUFFIXES
                   and not Path(output).is_dir())
    if out_is_file and len(files) != 1:
        raise ValueError(f"-o {output} is a file name but there are {len(files)} inputs; "
                         "give a folder for several inputs")
    jobs, errors, owner = [], [], {}
    sources = {source.resolve() for source, _ in files}
    for source, root in files:
        relative = source.relative_to(root) if root is not None else Path(source.name)
        if out_is_file:
            target = Path(output)
        elif output is not None:
            target = Path(output) / _writable_name(str(relative))
        elif root is not None:
            base = root.resolve()
            target = base.parent / f"{base.name}_{label}" / _writable_name(str(relative))
        else:
            target = source.with_name(_writable_name(f"{source.stem}_{label}{source.suffix}"))
        key = target.resolve()
        if key in sources:
            errors.append(f"{source}: output {target} would replace an input; choose another -o")
        elif key in owner:
            errors.append(f"{source}: output {target} is also the output of {owner[key]}")
        else:
            owner[key] = source
            jobs.append(Job(source, target))
    return jobs, errors


class _Report:
    """Counts and one-line messages; the bar (for several files) stays below the messages."""

    def __init__(self, total: int):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.progress = Progress(TextColumn("stylizing"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=True,
                                 disable=total < 2)
        self.task = self.progress.add_task("stylize", total=total)
        self.done = self.skipped = self.failed = 0
        self.start = time.perf_counter()

    def say(self, message: str, style: str = "") -> None:
        from rich.text import Text
        self.console.print(Text(message, style=style))

    def error(self, message: str) -> None:
        self.failed += 1
        self.say(f"error: {message}", "bold red")

    def advance(self) -> None:
        self.progress.advance(self.task)

    def summary(self) -> str:
        return (f"{self.done} done, {self.skipped} skipped, {self.failed} failed "
                f"in {time.perf_counter() - self.start:.1f} s")


def run(args: argparse.Namespace) -> int:
    from ..api import get_stylizer
    from ..models.checkpoint import CheckpointError
    try:
        options = options_from_args(args)
        label = style_label(options)
        files, input_errors = expand_inputs(args.inputs, args.recursive)
        jobs, plan_errors = plan_outputs(files, args.output, label)
    except (CheckpointError, ValueError) as exc:
        _Report(0).say(f"error: {exc}", "bold red")
        return 2
    report = _Report(len(jobs))
    for message in input_errors + plan_errors:
        report.error(message)
    todo = []
    for job in jobs:
        if job.target.exists() and not options.overwrite:
            report.skipped += 1
            report.say(f"skipped {job.source}: {job.target} exists (--overwrite to replace it)", "yellow")
        else:
            todo.append(job)
    if todo:
        report.progress.update(report.task, total=len(todo))
        try:
            stylizer = get_stylizer(options)
        except (CheckpointError, RuntimeError, ValueError) as exc:  # unusable style or device
            report.failed += len(todo)
            report.say(f"error: {exc}", "bold red")
            report.say(report.summary())
            return 2
        report.say(f"style {stylizer.describe()}", "dim")
        _stylize_jobs(todo, stylizer, options, report)
    report.say(report.summary())
    return 1 if report.failed else 0


def _stylize_jobs(todo: list[Job], stylizer, options: StylizeOptions, report: _Report) -> None:
    """Load → batch consecutive same-size images → stylize → write; a bad file fails alone.

    Only consecutive images are batched, so at most `batch_size` decoded images are held.
    """
    from ..io.image import ImageError, load_image
    pending: list = []
    with report.progress:
        for job in todo:
            try:
                loaded = load_image(job.source, options.max_pixels).resized(options.max_side)
            except ImageError as exc:
                report.error(str(exc))
                report.advance()
                continue
            if pending and (loaded.size != pending[0][1].size or len(pending) == options.batch_size):
                _flush(pending, stylizer, options, report)
            pending.append((job, loaded))
        _flush(pending, stylizer, options, report)


def _flush(pending: list, stylizer, options: StylizeOptions, report: _Report) -> None:
    import torch

    from ..io.image import (
        format_for,
        holds_alpha,
        pil_to_tensor,
        save_image,
        tensor_to_pil,
    )
    if not pending:
        return
    try:
        out = stylizer(torch.cat([pil_to_tensor(loaded.rgb) for _, loaded in pending]))
    except Exception as exc:  # e.g. out of memory: this batch fails, the next may fit
        hint = "; try --max-side or a smaller --batch-size" if "memory" in str(exc).lower() else ""
        for job, _ in pending:
            report.error(f"{job.source}: stylization failed ({type(exc).__name__}: {exc}){hint}")
            report.advance()
        pending.clear()
        return
    for index, (job, loaded) in enumerate(pending):
        try:
            if loaded.alpha is not None and not holds_alpha(format_for(job.target)):
                report.say(f"note: {job.target.name}: {format_for(job.target)} has no alpha "
                           "channel, transparency dropped", "yellow")
            save_image(loaded.merged(tensor_to_pil(out[index])), job.target, options.quality,
                       loaded.icc_profile)
            report.done += 1
        except Exception as exc:  # one unwritable output must not stop the batch
            report.error(f"{job.source}: {exc}")
        report.advance()
    pending.clear()
