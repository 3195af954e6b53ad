"""Per-kernel timeline of one fused-engine frame under each residual plan (cudnn, conv3x3).

The plan is forced with STYLEFORGE_CONV3X3 (off / on); three graph replays are recorded with the
PyTorch profiler and the last frame's kernels listed in order with their durations, plus the
frame's busy time and span. Writes JSON to --out.
    PYTHONPATH=$PWD python3 dev/kernels/conv3x3/profile_frame.py --out $OUT
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # cuda_graphs
from cuda_graphs import warm_runner


def frame(plan: str, h: int, w: int, dtype) -> dict:
    os.environ["STYLEFORGE_CONV3X3"] = "on" if plan == "conv3x3" else "off"
    runner, x = warm_runner(h, w, dtype)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        runner(x)
    end.record()
    end.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            runner(x)
        torch.cuda.synchronize()
    path = Path(tempfile.mkdtemp()) / "t.json"
    prof.export_chrome_trace(str(path))
    kern = sorted((e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "kernel"),
                  key=lambda e: e["ts"])
    n = len(kern) // 3
    last = kern[-n:]
    t0 = last[0]["ts"]
    return {"plan": plan, "frame": f"{h}x{w}", "dtype": str(dtype).split(".")[-1],
            "ms_per_frame": start.elapsed_time(end) / 20, "kernels": n,
            "busy_us": round(sum(e["dur"] for e in last), 1),
            "span_us": round(last[-1]["ts"] + last[-1]["dur"] - t0, 1),
            "rows": [(e["name"][:70], round(e["dur"], 2), round(e["ts"] - t0, 1)) for e in last]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="out/conv3x3")
    parser.add_argument("--sizes", default="512x512,1080x1920")
    args = parser.parse_args()
    result = []
    for size in args.sizes.split(","):
        h, w = map(int, size.split("x"))
        for plan in ("cudnn", "conv3x3"):
            r = frame(plan, h, w, torch.bfloat16)
            print(json.dumps({k: v for k, v in r.items() if k != "rows"}), flush=True)
            result.append(r)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile_frame.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
