"""`styleforge stylize INPUT... [-o OUT] [--style NAME | --checkpoint PATH | --blend SPEC]`.

Argument parsing and printing only. The flags become one `StylizeOptions` and one
`PipelineOptions` (`commands.arguments`); the library plans the outputs (`jobs.plan_jobs`:
inputs, output names, skip/overwrite, refusals) and runs them through the media pipeline
(`jobs.run_jobs`) with its cached `Stylizer`; this module prints what comes back
(`commands.report`). `-` as the input reads one image from stdin and `-o -` writes it to
stdout; `--json` prints one record per item. Where outputs go and what they are called:
`styleforge.jobs.plan` and `styleforge.jobs.naming`.
"""
from __future__ import annotations

import argparse
import os
import time

from ..engine.options import CHROMAS, StylizeOptions
from .arguments import (
    _checked,
    _number_in,
    add_pipeline_arguments,
    options_from_args,
    pipeline_options_from_args,
    register_engine_arguments,
)

_DEFAULTS = StylizeOptions()


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
    from ..ray.command import add_ray_arguments
    add_ray_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON record per item on stdout (on stderr when the image itself "
                        "goes to stdout): input, output, size [w, h] stylized, seconds (from the item "
                        "entering the pipeline to its output written, so waits in the queue behind "
                        "other items count), error, notes (warnings), skipped")


def run(args: argparse.Namespace) -> int:
    import sys

    # Nothing before `_start_cuda` imports torch (planning does: the default style's name).
    from ..jobs import STDIO, done_records, plan_jobs, refused_records
    from ..jobs.devices import devices_from_args
    from .report import Report
    json_to = None
    if args.json:
        json_to = sys.stderr if args.output == STDIO or STDIO in args.inputs else sys.stdout
    try:
        options = options_from_args(args)
        pipeline = pipeline_options_from_args(args)
        _start_cuda(args, options.device)
        plan = plan_jobs(args.inputs, args.output, options, recursive=args.recursive,
                         keep_names=getattr(args, "keep_names", False))
        devices = devices_from_args(args)
        if devices and getattr(args, "ray", None) is not None:
            raise ValueError("--gpus and --ray do not combine: on a Ray cluster each actor takes one GPU "
                             "(--ray-actors N)")
    except ValueError as exc:   # CheckpointError is one
        Report(0, json_to).error(str(exc))
        return 2
    report = Report(len(plan.jobs), json_to)
    todo = plan.pending(options.overwrite)
    for record in refused_records(plan) + done_records(plan, todo):
        report.settled(record)
    if todo and devices:
        report.progress.update(report.task, total=len(todo))
        return _stylize_on_devices(todo, options, pipeline, devices, report, len(plan.jobs))
    if todo and getattr(args, "ray", None) is not None:   # the same jobs, on a Ray cluster
        from ..ray.command import run_on_ray
        report.progress.update(report.task, total=len(todo))
        return run_on_ray(todo, options, args.ray, args.ray_actors, report)
    if todo:
        from ..notices import engine_notices
        with engine_notices(lambda message: report.say(message, "dim")):
            code = _stylize_here(todo, options, pipeline, report, len(plan.jobs))
        if code is not None:
            return code
    report.say(report.summary())
    return 1 if report.failed else 0


def _stylize_here(todo: list, options: StylizeOptions, pipeline, report, planned: int) -> int | None:
    """The jobs in this process, with its cached `Stylizer`; an exit code, or None when every job
    ran (the caller prints the summary)."""
    import sys

    from ..api import get_stylizer
    from ..jobs import run_jobs
    from ..media.records import Record
    from ..models.checkpoint import CheckpointError
    report.progress.update(report.task, total=len(todo))
    try:
        stylizer = get_stylizer(options)
    except (CheckpointError, RuntimeError, ValueError) as exc:  # unusable style or device
        report.say(f"error: {exc}", "bold red")
        for job in todo:   # --json: one record per input, each saying why nothing was written
            report.emit(Record(-1, str(job.source), error=str(exc)))
        report.failed += len(todo)
        report.say(report.summary())
        return 2
    report.say(f"style {stylizer.describe()}", "dim")
    started, reported = time.time(), set()
    try:
        with report.progress:
            for record in run_jobs(todo, stylizer, options, pipeline, stdin=sys.stdin.buffer,
                                   stdout=sys.stdout.buffer):
                reported.add(record.output)
                report.item(record)
    except RuntimeError as exc:  # e.g. --codec gpu where nvJPEG is unusable
        report.say(f"error: {exc}", "bold red")
        return 2
    except KeyboardInterrupt:
        for job in written_unreported(todo, reported, started):
            report.settled(Record(-1, str(job.source), str(job.target),
                                  notes=["written as the run was interrupted"]))
        report.say(f"interrupted: {report.summary(planned=planned)}", "bold red")
        return 130
    return None


def written_unreported(todo: list, reported: set, since: float) -> list:
    """The jobs whose output the pipeline finished after Ctrl-C reached the loop but before their
    record did: on disk and written since the run began (2 s of slack for coarse file times), so
    the summary counts what a user finds in the folder."""
    written = []
    for job in todo:
        target = str(job.target)
        if target in reported or target == "-":
            continue
        try:
            if os.stat(target).st_mtime >= since - 2:
                written.append(job)
        except OSError:
            pass
    return written


def _start_cuda(args: argparse.Namespace, device: str) -> None:
    """The one-process path: the CUDA driver and context start on a thread while torch is imported
    (`engine.cuda_warmup`; the import takes seconds, the driver's start tenths). Not for `--gpus`
    or `--ray`, whose engines run in other processes."""
    if any(getattr(args, name, None) is not None for name in ("gpus", "devices", "ray")):
        return
    from ..engine import cuda_warmup
    cuda_warmup.start(device)


def _stylize_on_devices(todo: list, options: StylizeOptions, pipeline, devices, report, planned: int) -> int:
    """`--gpus`: the same jobs over one engine process per device (`jobs.multi_device`)."""
    from ..jobs.multi_device import WorkerFailed, run_on_devices
    try:
        run = run_on_devices(todo, options, pipeline, devices)
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
