"""`styleforge export [STYLE | --arbitrary] --format onnx|aoti [-o FILE]`: a deployment file.

Thin: flags become `ExportOptions`, `styleforge.export.export_model` writes and checks the file,
and this prints where it went, its inputs and the PSNR of each check against the engine. Exit
code 1 when a check falls under 45 dB (the file is kept, for a person to look into).
"""
from __future__ import annotations

import contextlib
import logging
import warnings


def register(subparsers) -> None:
    from ..engine.options import DEFAULT_STYLE
    from ..export.options import (
        ARBITRARY_PAINTING_SIZE,
        DEFAULT_OPSET,
        DEVICES,
        FORMATS,
        ExportOptions,
    )

    p = subparsers.add_parser(
        "export", help="write the model as an ONNX file or an AOTInductor package",
        description="Export a style (or the arbitrary-style model) for serving without styleforge: "
                    "ONNX (onnxruntime, TensorRT) or an AOTInductor package (PyTorch only). "
                    "Dynamic batch, height and width; the file is checked against styleforge's "
                    "own output after it is written. See docs/export.md.")
    p.add_argument("style", nargs="?", default=None, metavar="STYLE",
                   help=f"built-in style name or checkpoint path (default: {DEFAULT_STYLE})")
    p.add_argument("--format", choices=FORMATS, default="onnx", help="onnx (default) or aoti")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write (default: STYLE.onnx or STYLE.pt2 here)")
    p.add_argument("--arbitrary", action="store_true",
                   help="export the arbitrary-style model: inputs photo and painting")
    p.add_argument("--arbitrary-weights", metavar="FILE", default=None,
                   help="--arbitrary: weights from `styleforge train-arbitrary` (default: the shipped ones)")
    p.add_argument("--style-size", type=int, default=ARBITRARY_PAINTING_SIZE, metavar="PX",
                   help=f"--arbitrary: the painting input is PX×PX (default {ARBITRARY_PAINTING_SIZE})")
    p.add_argument("--passes", type=int, default=ExportOptions.passes, metavar="N",
                   help=f"--arbitrary: apply the model N times, as `stylize --passes` "
                        f"(default {ExportOptions.passes})")
    p.add_argument("--opset", type=int, default=DEFAULT_OPSET, help=f"ONNX opset (default {DEFAULT_OPSET})")
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="aoti: compile the package for this device (default cpu)")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="do not run the written file against styleforge's output")


def _options(args):
    from ..export.options import ExportOptions
    return ExportOptions(style=args.style, format=args.format, output=args.output,
                         arbitrary=args.arbitrary, arbitrary_weights=args.arbitrary_weights,
                         style_size=args.style_size, passes=args.passes, opset=args.opset,
                         device=args.device, check=args.check)


@contextlib.contextmanager
def _tracer_notices_quiet():
    """PyTorch's own deprecation notices while tracing, and the ONNX exporter's note that
    torchvision's ops are not registered, tell a user nothing about their file."""
    from ..notices import quieted
    with quieted("torch.onnx._internal.exporter._registration", logging.ERROR), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def run(args) -> int:
    from rich.console import Console

    console = Console(soft_wrap=True)
    try:
        options = _options(args)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    from ..export import export_model
    from ..export.check import MIN_PSNR_DB
    try:
        with _tracer_notices_quiet():
            report = export_model(options)
    except (ValueError, RuntimeError, OSError) as exc:   # weights, missing packages, the disk
        console.print(f"[red]export failed:[/red] {exc}")
        return 1
    inputs = ", ".join(report.input_names)
    console.print(f"wrote [bold]{report.path}[/bold] ({report.format}, {report.name}; inputs: {inputs}; "
                  f"float32 NCHW 0–255, sides ≥ {report.min_side}) in {report.seconds:.0f} s")
    if report.not_checked:
        console.print(f"not checked: {report.not_checked}")
        return 0
    for check in report.checks:
        mark = "ok" if check.passed else f"[red]below {MIN_PSNR_DB:g} dB[/red]"
        console.print(f"  PSNR vs styleforge, {check.describe()} {mark}")
    return 0 if report.passed else 1

