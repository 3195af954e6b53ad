"""Diagnostics for session 2: where a 512² fused frame spends its time (bf16 vs fp16), and which
SDPA backend PyTorch picks for the attention anchors. Writes JSON under --out.

    PYTHONPATH=$PWD python3 dev/diag/frame_and_sdpa.py --out $OUT/diag.json
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from styleforge.bench.endtoend import load_bench_style
from styleforge.engine.backends import make_runner
from styleforge.models.checkpoint import build_model


def events_ms(fn, reps=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def frame_breakdown(dtype, size=512):
    checkpoint, _ = load_bench_style(None)
    runner = make_runner(build_model(checkpoint), torch.device("cuda"), dtype, "fused")
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(1, 3, size, size, device="cuda", generator=g) * 255
    with torch.inference_mode():
        per_frame = events_ms(lambda: runner(x))
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                runner(x)
            torch.cuda.synchronize()
    path = Path(tempfile.mkdtemp()) / "t.json"
    prof.export_chrome_trace(str(path))
    kern = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "kernel"]
    kern.sort(key=lambda e: e["ts"])
    n = len(kern) // 3
    frame = kern[-n:]                      # the last of three recorded frames
    busy = sum(e["dur"] for e in frame)
    span = frame[-1]["ts"] + frame[-1]["dur"] - frame[0]["ts"]
    rows = [(e["name"][:90], round(e["dur"], 2), round(e["ts"] - frame[0]["ts"], 2)) for e in frame]
    return {"dtype": str(dtype), "ms_per_frame_events": per_frame, "kernels": n,
            "busy_us": busy, "span_us": span, "rows": rows,
            "choices": {str(k): str(v) for k, v in getattr(runner, "layer_choices", {}).items()}}


def sdpa_backends():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = []
    for b, h, n in [(32, 12, 197), (32, 12, 577), (32, 12, 1025), (1, 8, 4096)]:
        q, k, v = (torch.randn(b, h, n, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        row = {"shape": f"{b}x{h}x{n}", "default_us": 1e3 * events_ms(lambda: F.scaled_dot_product_attention(q, k, v))}
        for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
            try:
                with sdpa_kernel(getattr(SDPBackend, name)):
                    row[name] = 1e3 * events_ms(lambda: F.scaled_dot_product_attention(q, k, v))
            except Exception as exc:   # a backend that refuses the shape
                row[name] = f"failed: {str(exc)[:80]}"
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            F.scaled_dot_product_attention(q, k, v)
            torch.cuda.synchronize()
        row["default_kernels"] = sorted({e.key[:80] for e in prof.key_averages() if e.device_time > 0})
        out.append(row)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    result = {"sdpa": sdpa_backends()}
    print(json.dumps(result["sdpa"], indent=1))
    for dt in (torch.bfloat16, torch.float16):
        r = frame_breakdown(dt)
        result[str(dt)] = r
        print(dt, {k: r[k] for k in ("ms_per_frame_events", "kernels", "busy_us", "span_us")})
    a.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
