"""`styleforge stylize INPUT... [-o OUT] [--style NAME | --checkpoint PATH | --blend SPEC]`.

Parses flags into one `StylizeOptions` (and the pipeline's `PipelineOptions`), expands inputs,
plans every output path, then streams the images through the library's media pipeline
(`styleforge.media`) and its cached `Stylizer`. `-` as the input reads one image from stdin and
`-o -` writes it to stdout; `--json` prints one record per item. It is not the engine: padding, strength, colour
and precision live in `styleforge.engine`; reading and atomic writing in `styleforge.io.image`.

Where outputs go (no `-o`): a file `photo.jpg` → `photo_<style>.jpg` beside it; a folder
`trip/` → a sibling folder `trip_<style>/` with the same file names, so a second run never picks
up the first run's outputs. `-o x.jpg` (a name with an image suffix) is a file and needs exactly
one input; `-o out` (no suffix, a trailing `/`, or an existing folder) is a folder, created if
needed, where `photo.jpg` becomes `photo_<style>.jpg`, so a second style into the same folder
does not collide with the first (`--keep-names` keeps the input names). Any other `-o out.xyz`
is refused rather than made into a folder. An input whose suffix Pillow cannot write (e.g.
`.psd`) is written as `.png`. Files inside the output folder, and files that are outputs of this
same plan, are never inputs, so running `stylize dir -r -o dir/styled` twice does not stylize
its own outputs; every output folder a run creates also gets a `.styleforge-output` mark (a
folder that existed is left alone), and a scan skips marked sub-folders, so a later `stylize dir -r` (another style,
no -o) does not stylize
`dir/styled` either. Outputs that cannot be written (a folder that is a file, no write
permission) are found here, before any work; an output that appears after planning (a second
run over the same files) is kept, not replaced (`media.images`).
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
    CHROMAS,
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
_GLOB_MAGIC = re.compile(r"[*?[]")
OUTPUT_MARK = ".styleforge-output"    # in each output folder; scans skip folders holding one


@dataclass
class Job:
    source: Path
    target: Path
    out_root: Path | None = None      # the output folder this plan made (gets OUTPUT_MARK)


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
    register_engine_arguments(p)
    p.add_argument("--max-side", type=_checked(_number_in(1, 1 << 30, int), "positive integer"),
                   default=_DEFAULTS.max_side, metavar="N", help="downscale so the longer side is ≤ N")
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs (default: skip)")
    p.add_argument("--quality", type=_checked(_number_in(1, 100, int), "integer in 1..100"),
                   default=_DEFAULTS.quality, help="JPEG/WebP quality (default 95)")
    p.add_argument("--chroma", choices=CHROMAS, default=_DEFAULTS.chroma,
                   help="JPEG chroma sampling: 444 (default, full colour resolution), 422 or 420 "
                        "(smaller files, blurred colour strokes)")
    p.add_argument("--max-pixels", type=_checked(_number_in(1, 1 << 62, int), "positive integer"),
                   default=_DEFAULTS.max_pixels, metavar="N",
                   help="refuse images with more pixels, before decoding them")
    p.add_argument("-r", "--recursive", action="store_true", help="descend into sub-folders")
    p.add_argument("--keep-names", action="store_true",
                   help="with -o FOLDER, keep the input file names (default: NAME_<style>.EXT)")
    add_pipeline_arguments(p)
    from ..jobs.devices import register_arguments
    register_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON record per item on stdout (on stderr when the image itself "
                        "goes to stdout): input, output, size [w, h] stylized, seconds (from the item "
                        "entering the pipeline to its output written, so waits in the queue behind "
                        "other items count), error, notes (warnings), skipped")


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
    which.add_argument("--style", help="built-in style name or checkpoint path (default: candy)")
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
                   help="--style-image: move the colours to the painting's between passes, or also after "
                        "the last (all); default none")
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


_PAINTING_ONLY = ("alpha", "passes", "style_size", "arbitrary_weights")


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


def expand_inputs(inputs: list[str], recursive: bool) -> tuple[list[tuple[Path, Path | None]], list[str]]:
    """INPUT args → ([(file, the folder it was found in or None)], [error lines])."""
    from ..io.image import SCAN_SUFFIXES

    def scan(folder: Path) -> list[Path]:
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(folder):
            # Hidden folders and earlier runs' output folders are not inputs.
            dirnames[:] = [d for d in dirnames if recursive and not d.startswith(".")
                           and not os.path.exists(os.path.join(dirpath, d, OUTPUT_MARK))]
            found += [Path(dirpath, name) for name in filenames if not name.startswith(".")
                      and Path(name).suffix.lower() in SCAN_SUFFIXES and os.path.isfile(os.path.join(dirpath, name))]
        return sorted(found)

    files: list[tuple[Path, Path | None]] = []
    errors: list[str] = []
    for raw in inputs:
        path = Path(raw).expanduser()
        if path.is_dir():
            found = scan(path)
            if not found:
                errors.append(_empty_folder_message(path, recursive))
            files += [(f, path) for f in found]
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


def _empty_folder_message(folder: Path, recursive: bool) -> str:
    from ..io.image import SCAN_SUFFIXES
    has_folders = any(p.is_dir() and not p.name.startswith(".") for p in folder.iterdir())
    hint = "; add -r to look in its sub-folders" if has_folders and not recursive else ""
    kinds = ", ".join(sorted(SCAN_SUFFIXES)[:6])
    return f"{folder}: no images in this folder (looked for {kinds}, …){hint}"


def style_label(options: StylizeOptions) -> str:
    from ..models.registry import default_style
    if options.style_images:
        return "+".join(Path(name).stem for name, _ in options.style_images)
    if options.blend:
        return "+".join(Path(name).stem for name, _ in options.blend)
    if options.checkpoint:
        return Path(options.checkpoint).stem
    return Path(options.style).stem if options.style else default_style()


NAME_MAX = 255                                   # bytes in one file name (ext4, APFS, NTFS)
_LOOKS_LIKE_SUFFIX = re.compile(r"^\.[A-Za-z][A-Za-z0-9]{0,4}$")


def _writable_name(name: str) -> str:
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


def _styled_name(relative: Path, label: str) -> str:
    """photo.jpg → photo_<label>.jpg, the label kept whole when the name must be shortened."""
    tail = f"_{label}{relative.suffix}"
    room = max(1, NAME_MAX - len(tail.encode()))
    stem = relative.stem.encode()[:room].decode(errors="ignore")
    return _writable_name(str(relative.with_name(stem + tail)))


def output_kind(output: str | None) -> str:
    """'none', 'file' or 'folder' for an -o value; ValueError for a name that is neither."""
    from ..io.image import SCAN_SUFFIXES
    if output is None:
        return "none"
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


def plan_outputs(files: list[tuple[Path, Path | None]], output: str | None,
                 label: str, keep_names: bool = False) -> tuple[list[Job], list[str]]:
    """Each input's output path; collisions, outputs that would replace an input and unwritable
    outputs are errors. Files found by scanning that are this plan's own outputs (inside the
    output folder, or the styled name of another input) are dropped, not stylized again."""
    from ..io.atomic import unwritable_reason
    kind = output_kind(output)
    if kind == "file" and len(files) != 1:
        raise ValueError(f"-o {output} is a file name but there are {len(files)} inputs; "
                         "give a folder for several inputs")
    out_dir = Path(output).resolve() if kind == "folder" else None

    def target_of(source: Path, root: Path | None) -> tuple[Path, Path | None]:
        """(output path, the output folder this plan owns, if any)."""
        relative = source.relative_to(root) if root is not None else Path(source.name)
        if kind == "file":
            return Path(output), None
        if kind == "folder":
            name = _writable_name(str(relative)) if keep_names else _styled_name(relative, label)
            return Path(output) / name, Path(output)
        if root is not None:
            base = root.resolve()
            folder = base.parent / f"{base.name}_{label}"
            return folder / _writable_name(str(relative)), folder
        return source.parent / _styled_name(Path(source.name), label), None

    planned = [(source, root, *target_of(source, root)) for source, root in files]
    own_outputs = {target.resolve() for _, _, target, _ in planned}
    jobs, errors, owner = [], [], {}
    sources = set()
    for source, root, target, _ in planned:
        resolved = source.resolve()
        if root is not None:   # found by scanning, not named by the user
            inside_output = (out_dir is not None and out_dir != root.resolve()
                             and out_dir in resolved.parents)
            if inside_output or resolved in own_outputs:
                continue
        sources.add(resolved)
    for source, root, target, out_root in planned:
        if source.resolve() not in sources:
            continue
        key = target.resolve()
        why = unwritable_reason(target)
        if key in sources:
            errors.append(f"{source}: output {target} would replace an input; choose another -o")
        elif key in owner:
            errors.append(f"{source}: output {target} is also the output of {owner[key]}")
        elif why:
            errors.append(f"{source}: cannot write {target}: {why}; choose another -o")
        else:
            owner[key] = source
            jobs.append(Job(source, target, out_root))
    return jobs, errors


class _NoBar:
    """The progress bar's interface, doing nothing: one image needs no bar, and not importing rich
    for it keeps a one-photo run's start short."""

    def add_task(self, *args, **kwargs) -> int:
        return 0

    def update(self, *args, **kwargs) -> None:
        pass

    advance = update

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc) -> None:
        pass


class _Report:
    """Counts and one-line messages; the bar (for several files) stays below the messages.

    With `json_to` set, every item also becomes one JSON line there (`media.Record.to_json`)."""

    def __init__(self, total: int, json_to=None):
        self.console = None
        self.progress = _NoBar()
        if total >= 2:
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
                                     TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                                     console=self.console, transient=True)
        self.task = self.progress.add_task("stylize", total=total, rate="")
        self.done = self.skipped = self.failed = 0
        self.json_to = json_to
        self.start = time.perf_counter()

    def say(self, message: str, style: str = "") -> None:
        if self.console is None:
            import sys
            print(message, file=sys.stderr, flush=True)
            return
        from rich.text import Text
        self.console.print(Text(message, style=style))

    def error(self, message: str, source: str = "") -> None:
        from ..media.records import Record
        self.failed += 1
        self.say(f"error: {message}", "bold red")
        self.emit(Record(-1, source, error=message))

    def emit(self, record) -> None:
        if self.json_to is not None:
            self.json_to.write(record.to_json() + "\n")
            self.json_to.flush()

    def item(self, record) -> None:
        """One finished item from the pipeline: count it, say what went wrong, advance the bar."""
        if record.skipped:      # another run wrote the output after this one was planned
            self.skipped += 1
            self.say(f"skipped {record.input}: {record.notes[0] if record.notes else 'output exists'}", "yellow")
            self.emit(record)
            self.progress.advance(self.task)
            return
        for note in record.notes:
            self.say(f"note: {note}", "yellow")
        if record.error is not None:
            self.failed += 1
            self.say(f"error: {record.error}", "bold red")
        else:
            self.done += 1
        self.emit(record)
        self.progress.advance(self.task)
        finished = self.done + self.failed
        self.progress.update(self.task, rate=f"{finished / (time.perf_counter() - self.start):.1f} images/s")

    def summary(self, planned: int | None = None) -> str:
        """The counts; with `planned` (an interrupted run) also how many were never reached."""
        counts = f"{self.done} done, {self.skipped} skipped, {self.failed} failed"
        if planned is not None:
            counts += f", {max(0, planned - self.done - self.skipped - self.failed)} not started"
        return f"{counts} in {time.perf_counter() - self.start:.1f} s"


def _split_stdio(args: argparse.Namespace, label: str):
    """(jobs, input errors, plan errors) with "-" as stdin input and/or stdout output."""
    from ..media.images import STDIO
    inputs = [raw for raw in args.inputs if raw != STDIO]
    reads_stdin = len(inputs) != len(args.inputs)
    files, input_errors = expand_inputs(inputs, args.recursive) if inputs else ([], [])
    to_stdout = args.output == STDIO or (reads_stdin and args.output is None)
    if to_stdout or reads_stdin:
        count = len(files) + reads_stdin
        if count != 1:
            raise ValueError(f"stdin/stdout ('-') takes exactly one image, but there are {count} inputs")
        source = Path(STDIO) if reads_stdin else files[0][0]
        if to_stdout:
            return [Job(source, Path(STDIO))], input_errors, []
        from ..io.image import SCAN_SUFFIXES
        if Path(args.output).suffix.lower() not in SCAN_SUFFIXES:
            raise ValueError(f"-o {args.output}: an image read from stdin needs an output file name "
                             "with an image suffix, or -o - for stdout")
        return [Job(source, Path(args.output))], input_errors, []
    jobs, plan_errors = plan_outputs(files, args.output, label, getattr(args, "keep_names", False))
    return jobs, input_errors, plan_errors


def run(args: argparse.Namespace) -> int:
    import sys

    from ..api import get_stylizer
    from ..media.images import STDIO
    from ..models.checkpoint import CheckpointError
    json_to = None
    if args.json:
        json_to = sys.stderr if args.output == STDIO or STDIO in args.inputs else sys.stdout
    try:
        options = options_from_args(args)
        pipeline = pipeline_options_from_args(args)
        label = style_label(options)
        jobs, input_errors, plan_errors = _split_stdio(args, label)
        from ..jobs.devices import devices_from_args
        devices = devices_from_args(args)
    except (CheckpointError, ValueError) as exc:
        _Report(0, json_to).error(str(exc))
        return 2
    report = _Report(len(jobs), json_to)
    for message in input_errors + plan_errors:
        report.error(message, message.split(": ", 1)[0])
    todo = []
    for job in jobs:
        if str(job.target) != STDIO and job.target.exists() and not options.overwrite:
            from ..media.records import Record
            report.skipped += 1
            report.say(f"skipped {job.source}: {job.target} exists (--overwrite to replace it)", "yellow")
            report.emit(Record(-1, str(job.source), str(job.target), skipped=True))
        else:
            todo.append(job)
    if todo and devices:
        report.progress.update(report.task, total=len(todo))
        return _stylize_on_devices(todo, options, pipeline, devices, report, len(jobs))
    if todo:
        report.progress.update(report.task, total=len(todo))
        try:
            stylizer = get_stylizer(options)
        except (CheckpointError, RuntimeError, ValueError) as exc:  # unusable style or device
            report.say(f"error: {exc}", "bold red")
            from ..media.records import Record
            for job in todo:   # --json: one record per input, each saying why nothing was written
                report.emit(Record(-1, str(job.source), error=str(exc)))
            report.failed += len(todo)
            report.say(report.summary())
            return 2
        report.say(f"style {stylizer.describe()}", "dim")
        try:
            _stylize_jobs(todo, stylizer, options, pipeline, report)
        except RuntimeError as exc:  # e.g. --codec gpu where nvJPEG is unusable
            report.say(f"error: {exc}", "bold red")
            return 2
        except KeyboardInterrupt:
            report.say(f"interrupted: {report.summary(planned=len(jobs))}", "bold red")
            return 130
    report.say(report.summary())
    return 1 if report.failed else 0


def pipeline_options_from_args(args: argparse.Namespace):
    from ..media.options import PipelineOptions
    return PipelineOptions(workers=args.workers, depth=args.queue_depth, codec=args.codec)


def mark_output_folders(jobs: list[Job]) -> None:
    """Create each output folder this plan makes, with OUTPUT_MARK in it, so later scans skip
    it. A folder that exists already is the user's (it may hold the inputs) and is not marked."""
    for folder in {job.out_root for job in jobs if job.out_root is not None}:
        if folder.exists():
            continue
        try:
            folder.mkdir(parents=True)
            (folder / OUTPUT_MARK).touch()
        except OSError:
            pass   # the write itself will say what is wrong with the folder


def _stylize_jobs(todo: list[Job], stylizer, options: StylizeOptions, pipeline, report: _Report) -> None:
    """Stream the jobs through the library's media pipeline; a bad file fails alone."""
    import sys

    from ..media.images import ImageJob, stylize_images
    mark_output_folders(todo)
    jobs = [ImageJob(job.source, job.target) for job in todo]   # a list: its length picks the codec
    with report.progress:
        for record in stylize_images(jobs, stylizer, options, pipeline, stdin=sys.stdin.buffer,
                                     stdout=sys.stdout.buffer):
            report.item(record)


def _stylize_on_devices(todo: list[Job], options: StylizeOptions, pipeline, devices, report: _Report,
                        planned: int) -> int:
    """`--gpus`: the same jobs over one engine process per device (`jobs.multi_device`)."""
    from ..jobs.multi_device import WorkerFailed, run_on_devices
    from ..media.images import ImageJob
    mark_output_folders(todo)
    try:
        run = run_on_devices([ImageJob(job.source, job.target) for job in todo], options, pipeline, devices)
        report.say(f"{len(devices)} engines: {', '.join(devices)}", "dim")
        with run, report.progress:
            for record in run:
                report.item(record)
    except (WorkerFailed, ValueError) as exc:
        report.say(f"error: {exc}", "bold red")
        report.say(report.summary(planned=planned))
        return 2
    except KeyboardInterrupt:
        report.say(f"interrupted: {report.summary(planned=planned)}; the jobs in flight were finished, "
                   "no partial file left", "bold red")
        return 130
    report.say(f"per device: {run.shares()}", "dim")
    report.say(report.summary())
    return 1 if report.failed else 0
