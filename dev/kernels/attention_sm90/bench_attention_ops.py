"""Only the attention cases of `styleforge bench --ops` (same cases, harness, gate and timer: CUDA
events, L2 flushed before each rep), rows stamped and appended to OUTPUT/ops.csv like the suite's.
For a short device call after an attention change; the full suite is `styleforge bench --ops`.

    PYTHONPATH=$PWD python3 dev/kernels/attention_sm90/bench_attention_ops.py --output $OUT/r
"""
import argparse

import torch

from styleforge.bench.ops import discover_op_modules, run_ops
from styleforge.bench.results import append_rows, new_run_id


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--output", required=True)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    device = torch.device("cuda")
    names = [n for n in discover_op_modules() if n.endswith("op_attention")]
    rows = run_ops(device, a.reps, modules=names, log=print)
    run_id = new_run_id()
    for row in rows:
        row.stamp(run_id, device.type)
    append_rows(rows, a.output)
    base = {(r.shape, r.dtype): r.median_ms for r in rows if r.provider == "sdpa" and r.status == "ok"}
    for r in rows:
        if r.provider == "styleforge" and r.status == "ok":
            print(f"{r.shape:28s} {r.dtype:9s} sdpa {1e3 * base[(r.shape, r.dtype)]:8.1f} us  ours "
                  f"{1e3 * r.median_ms:8.1f} us  x{base[(r.shape, r.dtype)] / r.median_ms:.3f}")


if __name__ == "__main__":
    main()
