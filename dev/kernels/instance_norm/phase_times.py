"""Where the single-launch InstanceNorm spends its time: phase boundaries per block.

    PYTHONPATH=$PWD python3 dev/kernels/instance_norm/phase_times.py --out $OUT/phase_times.json

Builds instance_norm.cu + instance_norm_single.cu with STYLEFORGE_SINGLE_PHASE_TIMES and a C entry
(phase_times/capi.cpp) into a private .so loaded with ctypes, so it never clashes with the package's
extension. For each shape: correctness against F.instance_norm + ReLU + reflect pad (fp32), event
timings of both paths (back-to-back launches), then the %globaltimer marks of the last single launch:
launch skew, statistics, barrier 1, finalize, barrier 2, coefficient staging, apply. Dev only.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[3]
CSRC = REPO / "styleforge" / "kernels" / "csrc"
SHAPES = [(1, 32, 512, 512), (1, 64, 256, 256), (1, 128, 128, 128), (1, 128, 270, 480)]
MARKS = ["start", "stats", "barrier1", "finalize", "barrier2", "coef", "apply"]


def build(workdir: Path) -> ctypes.CDLL:
    so = workdir / "sf_phase.so"
    cmd = ["nvcc", "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-gencode=arch=compute_90a,code=sm_90a",
           "-DSTYLEFORGE_SINGLE_PHASE_TIMES", "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
           "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "-I", str(CSRC),
           str(CSRC / "cuda" / "instance_norm.cu"), str(CSRC / "cuda" / "instance_norm_single.cu"),
           str(Path(__file__).parent / "phase_times" / "capi.cpp"), "-o", str(so)]
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(so))
    lib.sf_instance_norm.restype = ctypes.c_longlong
    lib.sf_instance_norm.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 4 + [ctypes.c_longlong] * 4 + \
        [ctypes.c_int] * 5 + [ctypes.c_void_p] * 2
    lib.sf_phase_times.argtypes = [ctypes.c_void_p]
    return lib


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    lib = build(Path("/tmp"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for n, c, h, w in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(0)
        x = (torch.randn(n, c, h, w, device="cuda", generator=g) * 25 + 60).bfloat16()
        x = x.contiguous(memory_format=torch.channels_last)
        wt, bs = torch.rand(c, device="cuda") + 0.5, torch.randn(c, device="cuda")
        out = torch.empty(n, c, h + 2, w + 2, device="cuda", dtype=torch.bfloat16,
                          memory_format=torch.channels_last)
        ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")

        def call(path):
            err = lib.sf_instance_norm(2, x.data_ptr(), out.data_ptr(), wt.data_ptr(), bs.data_ptr(), n, c, h, w,
                                       1, 1, 1, sms, path, ws.data_ptr(), stream)
            assert err == 0, f"launch error {err}"

        ref = F.pad(torch.relu(F.instance_norm(x.float(), weight=wt, bias=bs)), (1, 1, 1, 1), mode="reflect")
        row = {"shape": f"{n}x{c}x{h}x{w}"}
        for path, name in ((1, "split"), (2, "single")):
            out.zero_()
            call(path)
            torch.cuda.synchronize()
            row[f"{name} rel err"] = float((out.float() - ref).norm() / ref.norm())
            for _ in range(10):
                call(path)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(200):
                call(path)
            e.record()
            e.synchronize()
            row[f"{name} us (events, back to back)"] = round(1e3 * s.elapsed_time(e) / 200, 2)
        from torch.profiler import ProfilerActivity, profile
        for path, name in ((1, "split"), (2, "single")):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    call(path)
                torch.cuda.synchronize()
            kern = {}
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    kern.setdefault(e.name.split("<")[0].split("(")[0][-40:], []).append(e.device_time)
            row[f"{name} kernels us (profiler, median of 5)"] = {k: round(statistics.median(v), 2)
                                                                for k, v in kern.items()}
        torch.cuda.synchronize()
        call(2)
        torch.cuda.synchronize()
        buf = (ctypes.c_ulonglong * (2 * 1024 * 7))()
        assert lib.sf_phase_times(buf) == 0
        grid = 2 * sms
        gt = [[buf[b * 7 + i] for i in range(7)] for b in range(grid)]
        t0 = min(r[0] for r in gt)
        rel = [[(v - t0) / 1e3 for v in r] for r in gt]   # µs since the first block started
        col = lambda i: [r[i] for r in rel]
        planes = n * c
        row.update({
            "blocks": grid,
            "last block start us": round(max(col(0)), 2),
            "stats per block us (median)": round(statistics.median(r[1] - r[0] for r in rel), 2),
            "last stats done us": round(max(col(1)), 2),
            "barrier1 released us (median)": round(statistics.median(col(2)), 2),
            "finalize per block us (median, blocks < planes)": round(statistics.median(
                rel[b][3] - rel[b][2] for b in range(min(planes, grid))), 2),
            "last finalize done us": round(max(col(3)), 2),
            "barrier2 released us (median)": round(statistics.median(col(4)), 2),
            "coef staged us (median)": round(statistics.median(col(5)), 2),
            "apply per block us (median)": round(statistics.median(r[6] - r[5] for r in rel), 2),
            "last block end us": round(max(col(6)), 2),
        })
        rows.append(row)
        print(json.dumps(row, indent=1), flush=True)
    a.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
