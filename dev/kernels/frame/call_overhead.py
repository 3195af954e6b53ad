"""Where a fused-engine call spends its time outside the graph's kernels (H200, dev only).

A call is either the graph's conv1 and head pointed at the caller's frame and a fresh output
(engine/graph_io.py), then a replay; or the copy path: copy the frame into the graph's static input,
replay, clone the static output. This times, with CUDA events around each call as `styleforge bench` does (inputs
rotating, no sync between calls), the whole call and its parts alone, then reads one profiler trace
of 30 whole calls: per position in the call, the median gap before the kernel and its duration.
    python3 dev/kernels/frame/call_overhead.py [--size 512] [--dtype bf16]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_graphs import warm_runner  # noqa: E402

from styleforge.engine import graph_io  # noqa: E402


def per_call_ms(fn, inputs, reps: int = 200) -> float:
    for i in range(20):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        fn(inputs[i % len(inputs)])
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


def trace_positions(runner, inputs, calls: int = 30, label: str = "call") -> None:
    from torch.profiler import ProfilerActivity, profile
    for i in range(5):
        runner(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            runner(inputs[i % len(inputs)])
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type.name == "CUDA"),
                     key=lambda e: e.time_range.start)
    per_call = len(kernels) // calls
    print(f"{label}: {len(kernels)} GPU events in {calls} calls: {per_call} per call")
    if per_call * calls != len(kernels):
        return
    rows = []
    for pos in range(per_call):
        gaps, durs = [], []
        for c in range(calls):
            k = kernels[c * per_call + pos]
            prev = kernels[c * per_call + pos - 1] if c * per_call + pos > 0 else None
            durs.append(k.time_range.end - k.time_range.start)
            if prev is not None:
                gaps.append(k.time_range.start - prev.time_range.end)
        rows.append((statistics.median(gaps), statistics.median(durs), kernels[pos].name[:70]))
    spans = [kernels[(c + 1) * per_call - 1].time_range.end - kernels[c * per_call].time_range.start
             for c in range(calls)]
    for gap, dur, name in rows:
        print(f"  gap {gap:7.2f} us  dur {dur:7.2f} us  {name}")
    print(f"  first kernel start to last kernel end per call: median {statistics.median(spans):.2f} us")


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"))
    args = parser.parse_args()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    runner, x = warm_runner(args.size, args.size, dtype)
    gen = torch.Generator(device="cuda").manual_seed(11)
    inputs = [torch.rand(x.shape, device="cuda", generator=gen) * 255 for _ in range(8)]
    entry = runner._graph_for(inputs[0])
    print(f"graph_io: {'bound' if entry.io is not None else 'not bound (copy path)'}")

    def static(fn):   # the graph's nodes back on its static tensors, then fn
        def run(x):
            if entry.io is not None:
                entry.io.restore()
            return fn(x)
        return run

    def copy_path(x):
        entry.static_in.copy_(x)
        entry.graph.replay()
        return entry.static_out.clone()

    spare_out = [torch.empty_like(entry.static_out) for _ in range(2)]
    spare_in = [x.clone() for x in inputs[:2]]
    turn = [0]

    def updated(both: bool):   # the graph's nodes repointed before each replay, alternating
        def run(x):
            turn[0] ^= 1
            entry.io._point(spare_in[turn[0]].data_ptr() if both else entry.static_in.data_ptr(),
                            spare_out[turn[0]].data_ptr())
            entry.graph.replay()
        return run

    def forced(x):   # both nodes rewritten with the static pointers they already hold
        functions = graph_io._functions()
        functions.sf_graph_io_retarget(entry.io.executable, entry.io.image_node, entry.static_in.data_ptr())
        functions.sf_graph_io_retarget(entry.io.executable, entry.io.output_node, entry.static_out.data_ptr())
        entry.graph.replay()

    if entry.io is not None:
        print(f"forced same-value updates {per_call_ms(static(forced), inputs) * 1e3:.1f} us")
        trace_positions(static(lambda x: entry.graph.replay()), inputs, label="replay, none")
        trace_positions(updated(False), inputs, label="output node updated")
        trace_positions(updated(True), inputs, label="both updated")
        trace_positions(static(forced), inputs, label="forced same-value updates")
        print("  ".join(f"{name} {per_call_ms(fn, inputs) * 1e3:.1f} us" for name, fn in
                        {"replay, output node updated": updated(False), "both updated": updated(True),
                         "replay, none": static(lambda x: entry.graph.replay())}.items()))
    parts = {"call": runner, "copy path": static(copy_path), "replay": static(lambda x: entry.graph.replay()),
             "copy": lambda x: entry.static_in.copy_(x), "clone": lambda x: entry.static_out.clone()}
    for _ in range(2):
        print("  ".join(f"{name} {per_call_ms(fn, inputs) * 1e3:.1f} us" for name, fn in parts.items()))
    trace_positions(runner, inputs)


if __name__ == "__main__":
    main()
