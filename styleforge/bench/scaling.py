"""`--gpus` scaling: one folder of photos through 1, 2, … engine processes; images/s and bytes.

`python -m styleforge.bench.scaling --images 600 --gpus 1,all --output DIR` writes N 1080p JPEGs
(the pipeline bench's synthetic photos), then runs the library's multi-device executor
(`jobs.multi_device`) over them once per device count, each into a fresh folder, and last the
same folder through the one-process loop (`jobs.run_jobs`, what `stylize` runs without --gpus)
in this process, warmed as a worker warms. It appends one `scaling` row per run to
DIR/scaling.csv (the `scaling` table in docs/multi_gpu.md): provider `gpus-N` or `one-process`,
op `jpeg-1080p-folder`, `fps` the images/s once every engine was warm (records after the last
worker said ready, over the time from then to the last record), and in `notes` the images/s
over the middle 80 % of the records (no warm-up leftovers, no tail), the wall images/s (start-up
included), the ratio to the first count, the longest warm-up, the fewest jobs a worker's
pipeline held at once at its peak, each device's share, and whether every output's SHA-256
equals the first count's. Where the time went, also in `notes` and printed: `arrived_s`, the
seconds from the go (every engine warm) until 10, 50, 90 and 100 % of the outputs had arrived,
and `workers`, per device, when it passed the go, when its first and last record arrived and the
longest a record waited for the parent (`jobs.multi_device.DeviceRun.timeline`); against the
middle rate they show whether a shortfall sits at the start, in the tail, or on one device.
Not a measurement of one engine (`bench --pipeline` is), nor of the CLI's start-up
(`bench --startup`).
"""
from __future__ import annotations

import argparse
import hashlib
import math
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..engine.options import StylizeOptions
from ..media.options import PipelineOptions
from .pipeline_inputs import write_photo
from .results import Row, append_rows, new_run_id


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if not p.name.startswith(".")}


def _rates(times: list[float], since: float) -> tuple[float, float]:
    """(images/s from `since` to the last record, images/s over the middle 80 % of the records):
    the second leaves out the first and last tenth, where warm-up leftovers and the tail sit."""
    if not times:
        return 0.0, 0.0
    steady = len(times) / (times[-1] - since) if times[-1] > since else 0.0
    lo, hi = len(times) // 10, len(times) * 9 // 10
    middle = (hi - lo) / (times[hi] - times[lo]) if hi > lo and times[hi] > times[lo] else steady
    return steady, middle


ARRIVED = (10, 50, 90, 100)     # the % of outputs whose arrival time a row records


def _arrived(times: list[float], since: float) -> dict[str, float]:
    """Seconds from `since` until p % of the records had arrived, for p in ARRIVED."""
    if not times:
        return {}
    return {str(p): round(times[max(0, math.ceil(p * len(times) / 100) - 1)] - since, 4) for p in ARRIVED}


def _timeline_text(result: dict) -> str:
    """'arrived 10/50/90/100 %: 0.31/1.20/2.10/2.40 s after the engines were warm; cuda:0 go 0.001,
    first 0.050, last 2.400 s, waited for the parent ≤ 0.004 s; cuda:1 …'"""
    arrived = "/".join(f"{result['arrived_s'][str(p)]:.2f}" for p in ARRIVED if str(p) in result["arrived_s"])
    parts = [f"arrived {'/'.join(map(str, ARRIVED))} %: {arrived} s after the engines were warm"]
    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"
    for name, w in (result.get("workers") or {}).items():
        parts.append(f"{name} go {fmt(w['go_s'])}, first {fmt(w['first_s'])}, last {fmt(w['last_s'])} s, "
                     f"waited for the parent ≤ {fmt(w['lag_max_s'])} s")
    return "; ".join(parts)


def run_count(inputs: Path, out: Path, devices: tuple[str, ...], options: StylizeOptions) -> dict:
    """The multi-device executor over the folder; rates from the moment every engine was warm."""
    from ..jobs.multi_device import run_on_devices
    jobs = _plan(inputs, out, options)
    times, failed = [], []
    with run_on_devices(jobs, options, PipelineOptions(), devices, start_together=True) as run:
        for record in run:
            times.append(time.monotonic())      # the executor's clock (its ready_at, its workers')
            if record.error:
                failed.append(record.error)
    if failed:
        raise RuntimeError(f"{len(failed)} images failed, e.g. {failed[0]}")
    steady, middle = _rates(times, run.ready_at)
    return {"steady": steady, "middle": middle, "wall": len(jobs) / (run.finished - run.started),
            "images": len(jobs), "shares": run.shares(), "digests": digests(out),
            "arrived_s": _arrived(times, run.ready_at), "workers": run.timeline(),
            "warm_s": max(w.warm_s for w in run.workers),
            "peak_in_flight": min(w.peak_in_flight for w in run.workers)}


def run_one_process(inputs: Path, out: Path, options: StylizeOptions) -> dict:
    """The same folder through the library's one-process loop (`jobs.run_jobs`, what `styleforge
    stylize` runs without --gpus) in this process, warmed the way a worker warms: the baseline the
    executor's one-device row is compared with."""
    from ..api import get_stylizer
    from ..jobs import run_jobs
    from ..media.images import ImageJob, warm_images
    jobs = _plan(inputs, out, options)
    start = time.monotonic()
    stylizer = get_stylizer(options)
    loaded = time.monotonic()
    warm_images(ImageJob(jobs[0].source, jobs[0].target), stylizer, options, PipelineOptions(), len(jobs))
    ready = time.monotonic()
    times, failed = [], []
    for record in run_jobs(jobs, stylizer, options, PipelineOptions()):
        times.append(time.monotonic())
        if record.error:
            failed.append(record.error)
    if failed:
        raise RuntimeError(f"{len(failed)} images failed, e.g. {failed[0]}")
    steady, middle = _rates(times, ready)
    return {"steady": steady, "middle": middle, "wall": len(jobs) / (times[-1] - start),
            "images": len(jobs), "shares": f"{stylizer.device} {len(jobs)} (one process)",
            "digests": digests(out), "warm_s": ready - loaded, "peak_in_flight": None,
            "arrived_s": _arrived(times, ready), "workers": None}


def _plan(inputs: Path, out: Path, options: StylizeOptions) -> list:
    from ..jobs import plan_jobs
    return plan_jobs([str(inputs)], str(out) + "/", options, keep_names=True).pending(options.overwrite)


def main(argv: list[str] | None = None) -> int:
    from ..jobs.devices import parse_devices, parse_gpus
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=600)
    p.add_argument("--size", default="1920x1080")
    p.add_argument("--gpus", default="1,all", help="device counts, each a number or all")
    p.add_argument("--devices", default=None, help="instead of the GPUs, these (e.g. cpu,cpu: a CPU check)")
    p.add_argument("--style", default="candy")
    p.add_argument("--workdir", default=None, help="where the photos and outputs go (default: temp)")
    p.add_argument("--output", default="benchmarks/results")
    p.add_argument("--no-one-process", action="store_true",
                   help="leave out the one-process baseline over the same folder")
    args = p.parse_args(argv)
    width, height = map(int, args.size.lower().split("x"))
    work = Path(args.workdir or tempfile.mkdtemp(prefix="sf-scaling-"))
    inputs = work / "in"
    inputs.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with ThreadPoolExecutor() as pool:     # Pillow encodes without the GIL
        list(pool.map(lambda i: write_photo(inputs / f"{i:05d}.jpg", width, height, i), range(args.images)))
    print(f"{args.images} photos {width}x{height} in {time.perf_counter() - start:.1f} s", flush=True)
    every = parse_devices(args.devices) if args.devices else parse_gpus("all")
    kind = "cpu" if every[0] == "cpu" else "cuda"
    options = StylizeOptions(style=args.style, device=kind, backend="reference" if kind == "cpu" else "auto")
    run_id, rows, first = new_run_id(), [], None
    runs = [(count_text, every if count_text == "all" else every[:int(count_text)])
            for count_text in args.gpus.split(",")]
    if not args.no_one_process:
        runs.append(("one", every[:1]))   # last: this process touches no GPU before the workers
    for count_text, devices in runs:
        one = count_text == "one"
        if one:
            result = run_one_process(inputs, work / "out-one", options)
        else:
            result = run_count(inputs, work / f"out{len(devices)}", devices, options)
        first = first or result
        same = result["digests"] == first["digests"]
        ratio = result["steady"] / first["steady"] if first["steady"] else 0.0
        label = "one process" if one else f"{len(devices)} GPU(s)"
        print(f"{label}: {result['steady']:.1f} images/s warm, {result['middle']:.1f} over the middle 80 %, "
              f"{result['wall']:.1f} wall, {ratio:.2f}x, bytes identical: {same}, warm-up "
              f"{result['warm_s']:.1f} s, shares: {result['shares']}"
              + (f", jobs in flight per worker ≥ {result['peak_in_flight']}" if not one else ""), flush=True)
        print(f"  {_timeline_text(result)}", flush=True)
        rows.append(Row("scaling", "one-process" if one else f"gpus-{len(devices)}", "ok" if same else "failed",
                        "" if same else "output bytes differ from the first count's",
                        "jpeg-1080p-folder", f"{width}x{height}", batch=1, fps=round(result["steady"], 2),
                        reps=result["images"], timer="wall",
                        notes={"devices": len(devices), "one_process": one, "wall_fps": round(result["wall"], 2),
                               "middle_fps": round(result["middle"], 2), "ratio_vs_first": round(ratio, 3),
                               "bytes_identical": same, "warm_s": round(result["warm_s"], 2),
                               "peak_in_flight": result["peak_in_flight"], "shares": result["shares"],
                               "arrived_s": result["arrived_s"], "workers": result["workers"],
                               "style": args.style},
                        ).stamp(run_id, kind))
    append_rows(rows, args.output)
    return 0 if all(r.status == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
