"""`styleforge profile`: record one stylization with torch.profiler; print the top kernels.

Writes a Chrome trace (open in https://ui.perfetto.dev or chrome://tracing). The recorded frame
sits in an NVTX range `styleforge.profile`, which docs/benchmarking.md uses to point Nsight
Compute at it. Thin layer over `styleforge.bench.profile.profile_stylization`.
"""
from __future__ import annotations

import argparse

from ..engine.options import BACKENDS, DEVICES, PRECISIONS


def register(subparsers) -> None:
    p = subparsers.add_parser("profile", help="torch.profiler trace of one stylization + top kernels",
                              description="Warm up, then record one stylization of a random image "
                                          "with torch.profiler; write a Chrome trace and print the "
                                          "kernels that took the most device time (CPU time on CPU).")
    p.add_argument("--size", default="1080p", help="a number (square), WxH, or 720p/1080p/1440p/4k")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--backend", default="auto", choices=BACKENDS)
    p.add_argument("--precision", default="auto", choices=PRECISIONS)
    p.add_argument("--style", default=None, help="built-in style or checkpoint (default: default style "
                                                 "or random weights)")
    p.add_argument("--warmup", type=int, default=3, help="unrecorded runs first")
    p.add_argument("--top", type=int, default=15, help="rows in the kernel table")
    p.add_argument("--output", default="trace.json", help="Chrome trace file to write")


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..bench.endtoend import parse_sizes
    from ..bench.profile import profile_stylization
    from ..models.checkpoint import CheckpointError
    from .bench import make_console
    console = make_console()
    try:
        sizes = parse_sizes(args.size)
        if len(sizes) != 1:
            raise ValueError("--size takes one size")
        result = profile_stylization(sizes[0], device=args.device, backend=args.backend,
                                     precision=args.precision, batch=args.batch_size, style=args.style,
                                     output=args.output, warmup=args.warmup, top=args.top)
    except (ValueError, CheckpointError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    except RuntimeError as exc:
        console.print(f"[red]error:[/] {exc}")
        return 1
    what = "CUDA kernels by self device time" if result.time_kind == "device" else "CPU ops by self CPU time"
    table = Table(title=f"Top {what}\n{result.description}", title_justify="left")
    table.add_column("kernel", overflow="fold", max_width=110)
    table.add_column("calls", justify="right")
    table.add_column("total ms", justify="right")
    table.add_column("share", justify="right")
    for k in result.kernels:
        table.add_row(k.name, str(k.calls), f"{k.total_ms:.3f}", f"{k.share:.1%}")
    if result.note:
        console.print(f"[yellow]note:[/] {result.note}")
    console.print(table)
    console.print(f"wrote {result.trace}")
    return 0
