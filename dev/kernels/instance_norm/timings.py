"""Quick GPU timings of the fused InstanceNorm op and the fused engine, for the device script.

Not the benchmark suite (`styleforge bench --ops` is, with its correctness gate and result
rows): a fast look, in one run, at (1) the device-to-device copy bandwidth (bf16 copy_ of 1 GiB and of 4 GiB;
fractions are taken against the larger), (2) the op
against F.instance_norm + ReLU (and + reflection pad, what the op replaces) in bf16
channels_last on the network's shapes at 512², 1080p and 4K, and (3) the fused engine against
the eager bf16 network end to end. Kernel timings replay a CUDA graph of many calls, each on
a different input buffer when one would fit in L2, so neither launch overhead nor a warm L2
flatters them; the median of several replays is reported. Writes JSON rows to --out.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels

RESOLUTIONS = {"512²": (512, 512), "1080p": (1080, 1920), "4K": (2160, 3840)}
LEVELS = ((32, 1), (64, 2), (128, 4))
L2_DODGE_BYTES = 256 << 20


def graph_ms(calls: list, reps: int = 20, replays: int = 7) -> float:
    """Median ms per call of `reps` calls (cycling through `calls`) captured in one CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for fn in calls[:3]:
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(reps):
            calls[i % len(calls)]()
    times = []
    for _ in range(replays + 2):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    del graph
    return statistics.median(times[2:])


def copy_bandwidth_gbs(nbytes: int) -> float:
    """(read + write) GB/s of a bf16 device-to-device copy_ of nbytes."""
    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda").uniform_()
    dst = torch.empty_like(src)
    # Not in a graph: a captured copy_ becomes a memcpy node that the copy engines serve, which
    # read 2.77 TB/s on an H200 where the SMs' copy kernel reads 4.2 (2026-11-21).
    ms = event_ms(lambda: dst.copy_(src), reps=10)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (ms * 1e-3) / 1e9


def op_rows(copy_gbs: float, quick: bool) -> list[dict]:
    rows = []
    shapes = []
    for name, (h, w) in RESOLUTIONS.items():
        if quick and name == "4K":
            continue
        shapes += [(name, (1, c, h // d, w // d), torch.bfloat16, True) for c, d in LEVELS]
    shapes += [("1080p batch 2", (2, 32, 1080, 1920), torch.bfloat16, True),
               ("1080p fp32", (1, 32, 1080, 1920), torch.float32, True),
               ("1080p NCHW", (1, 32, 1080, 1920), torch.bfloat16, False)]
    for label, shape, dtype, channels_last in shapes:
        n, c, h, w = shape
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        x0 = (torch.randn(shape, device="cuda") * 30 + 40).to(dtype).contiguous(memory_format=fmt)
        copies = max(1, min(16, math.ceil(L2_DODGE_BYTES / (x0.numel() * x0.element_size()))))
        xs = [x0] + [x0.clone() for _ in range(copies - 1)]
        weight, bias = torch.rand(c, device="cuda") + 0.5, torch.randn(c, device="cuda")
        wt, bt = weight.to(dtype), bias.to(dtype)
        providers = {
            "torch IN+ReLU": [lambda x=x, wt=wt, bt=bt: torch.relu_(F.instance_norm(x, weight=wt, bias=bt))
                              for x in xs],
            "torch IN+ReLU+pad": [lambda x=x, wt=wt, bt=bt: F.pad(torch.relu_(F.instance_norm(x, weight=wt, bias=bt)),
                                                                  (1, 1, 1, 1), mode="reflect") for x in xs],
            "styleforge": [lambda x=x, w=weight, b=bias: kernels.instance_norm(x, w, b, relu=True, pad=1)
                           for x in xs],
        }
        es = x0.element_size()
        fewest = x0.numel() * es + n * c * (h + 2) * (w + 2) * es
        times = {name: graph_ms(calls) for name, calls in providers.items()}
        # The op's two CUDA paths, forced (the env var is read when a call is captured).
        for path in ("split", "single"):
            os.environ["STYLEFORGE_INSTANCE_NORM_PATH"] = path
            times[f"styleforge {path}"] = graph_ms(providers["styleforge"])
        os.environ.pop("STYLEFORGE_INSTANCE_NORM_PATH")
        gbs = fewest / (times["styleforge"] * 1e-3) / 1e9
        rows.append({"kind": "op", "case": label, "shape": "x".join(map(str, shape)), "dtype": str(dtype),
                     "channels_last": channels_last, **{f"{k} ms": round(v, 4) for k, v in times.items()},
                     "styleforge GB/s (read x once + write out)": round(gbs, 1),
                     "fraction of copy bandwidth": round(gbs / copy_gbs, 3),
                     "speedup vs IN+ReLU": round(times["torch IN+ReLU"] / times["styleforge"], 1),
                     "speedup vs IN+ReLU+pad": round(times["torch IN+ReLU+pad"] / times["styleforge"], 1)})
        del xs, x0, providers
        torch.cuda.empty_cache()
    return rows


def event_ms(fn, reps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


@torch.inference_mode()
def engine_rows(quick: bool) -> list[dict]:
    from styleforge.engine.fused import FusedRunner
    from styleforge.models import TransformerNet
    model = TransformerNet().eval()
    eager = TransformerNet().eval()
    eager.load_state_dict(model.state_dict())
    eager = eager.to("cuda", torch.bfloat16, memory_format=torch.channels_last)
    runner = FusedRunner(model, torch.device("cuda"), torch.bfloat16)
    rows = []
    for name, (h, w) in RESOLUTIONS.items():
        if quick and name == "4K":
            continue
        x = torch.rand(1, 3, h, w, device="cuda") * 255
        xb = x.to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
        fused = event_ms(lambda x=x: runner(x), reps=10, warmup=3)
        plain = event_ms(lambda xb=xb: eager(xb), reps=5)
        rows.append({"kind": "e2e", "case": f"{name} batch 1 bf16", "fused ms": round(fused, 3),
                     "eager bf16 ms": round(plain, 3), "speedup vs eager": round(plain / fused, 2)})
    return rows


def show(rows: list[dict]) -> None:
    for kind in ("copy", "op", "e2e"):
        subset = [r for r in rows if r["kind"] == kind]
        if not subset:
            continue
        keys = [k for k in subset[0] if k != "kind"]
        widths = [max(len(k), *(len(str(r.get(k, ""))) for r in subset)) for k in keys]
        sys.stdout.write("\n" + "  ".join(k.ljust(wd) for k, wd in zip(keys, widths)) + "\n")
        for r in subset:
            sys.stdout.write("  ".join(str(r.get(k, "")).ljust(wd) for k, wd in zip(keys, widths)) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    parser.add_argument("--quick", action="store_true", help="skip the 4K shapes")
    args = parser.parse_args()
    ok, reason = kernels.cuda_kernels_available()
    if not ok:
        sys.stderr.write(f"CUDA kernels unavailable: {reason}\n")
        return 2
    # Two sizes; fractions use the larger result (the stricter ceiling).
    copies = {size: copy_bandwidth_gbs(size << 30) for size in (1, 4)}
    copy_gbs = max(copies.values())
    rows = [{"kind": "copy", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
             **{f"copy GB/s (read + write, {size} GiB bf16)": round(v, 1) for size, v in copies.items()},
             "ceiling used GB/s": round(copy_gbs, 1)}]
    rows += op_rows(copy_gbs, args.quick)
    rows += engine_rows(args.quick)
    show(rows)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
