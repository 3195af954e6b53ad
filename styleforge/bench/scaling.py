"""`--gpus` scaling: one folder of photos through 1, 2, … engine processes; images/s and bytes.

`python -m styleforge.bench.scaling --images 600 --gpus 1,all --output DIR` writes N 1080p JPEGs
(the pipeline bench's synthetic photos), then runs the library's multi-device executor
(`jobs.multi_device`) over them once per device count, each into a fresh folder, and appends one
`scaling` row per count to DIR/scaling.csv (the `scaling` table in docs/multi_gpu.md): provider
`gpus-N`, op `jpeg-1080p-folder`, `fps` the images/s once every engine was loaded (records that
arrived after the last worker said ready, over the time from then to the last record), and in
`notes` the wall images/s (start-up included), the ratio to the first count, each device's
share, and whether every output's SHA-256 equals the first count's. Not a measurement of one
engine (`bench --pipeline` is), nor of the CLI's start-up (`bench --startup`).
"""
from __future__ import annotations

import argparse
import hashlib
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


def run_count(inputs: Path, out: Path, devices: tuple[str, ...], options: StylizeOptions) -> dict:
    from ..jobs import plan_jobs
    from ..jobs.multi_device import run_on_devices
    plan = plan_jobs([str(inputs)], str(out) + "/", options, keep_names=True)
    jobs = plan.pending(options.overwrite)
    with run_on_devices(jobs, options, PipelineOptions(), devices, start_together=True) as run:
        failed = [r.error for r in run if r.error]
    if failed:
        raise RuntimeError(f"{len(failed)} images failed, e.g. {failed[0]}")
    steady = run.after_ready / (run.finished - run.ready_at) if run.after_ready else 0.0
    return {"steady": steady, "wall": len(jobs) / (run.finished - run.started), "images": len(jobs),
            "shares": run.shares(), "digests": digests(out)}


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
    for count_text in args.gpus.split(","):
        devices = every if count_text == "all" else every[:int(count_text)]
        result = run_count(inputs, work / f"out{len(devices)}", devices, options)
        first = first or result
        same = result["digests"] == first["digests"]
        ratio = result["steady"] / first["steady"] if first["steady"] else 0.0
        print(f"{len(devices)} GPU(s): {result['steady']:.1f} images/s steady, {result['wall']:.1f} wall, "
              f"{ratio:.2f}x, bytes identical: {same}, shares: {result['shares']}", flush=True)
        rows.append(Row("scaling", f"gpus-{len(devices)}", "ok" if same else "failed",
                        "" if same else "output bytes differ from the first count's",
                        "jpeg-1080p-folder", f"{width}x{height}", batch=1, fps=round(result["steady"], 2),
                        reps=result["images"], timer="wall",
                        notes={"devices": len(devices), "wall_fps": round(result["wall"], 2),
                               "ratio_vs_first": round(ratio, 3), "bytes_identical": same,
                               "shares": result["shares"], "style": args.style},
                        ).stamp(run_id, kind))
    append_rows(rows, args.output)
    return 0 if all(r.status == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
