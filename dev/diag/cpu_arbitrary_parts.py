"""Where one arbitrary-style CPU call spends its time, part by part, in CPU ms and wall ms.

Runs the engine exactly as a user's frame runs it (`ArbitraryStylizer.bind(...)(photo)`, the
painting's code cached, the engine's defaults unless flags say otherwise) with its parts wrapped
in timers: the VGG encoder, each level's attention block (split into its key features, the
attention statistics and the rest: normalisation and FFN), the decoder, degrid, palette transport,
the aimed last share (its full transport and its two images' palette measure apart), the
stroke-scale resizes. `other` is the call's total minus its parts (Python, padding, copies).
CPU ms is the process's CPU time (all threads, OpenVINO's included): on a shared machine it grows
far less with the others' load than the wall time does. The painting's encoding is timed once
on its own (a new painting's first frame pays it; later frames do not). A dev diagnostic, not a
bench row (`styleforge.bench.cpu_arbitrary` is that):

    python dev/diag/cpu_arbitrary_parts.py --photo P --painting Q [--backend openvino --precision int8]
"""
from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from contextlib import contextmanager

import torch

from styleforge.bench.cpu_arbitrary import load_photo
from styleforge.engine import arbitrary as engine_module
from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.options import StylizeOptions
from styleforge.models.arbitrary import palette_share_numpy
from styleforge.models.arbitrary import transfer as transfer_module

SPENT: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])   # name → [cpu s, wall s, calls]
_STACK: list[str] = []


@contextmanager
def part(name: str):
    """Time `name`, excluding time already booked to a part nested inside it."""
    c0, w0 = time.process_time(), time.perf_counter()
    _STACK.append(name)
    try:
        yield
    finally:
        _STACK.pop()
        dc, dw = time.process_time() - c0, time.perf_counter() - w0
        entry = SPENT[name]
        entry[0] += dc
        entry[1] += dw
        entry[2] += 1
        if _STACK:   # the enclosing part books only its own share
            outer = SPENT[_STACK[-1]]
            outer[0] -= dc
            outer[1] -= dw


def wrapped(fn, name):
    def run(*args, **kwargs):
        with part(name if isinstance(name, str) else name(*args)):
            return fn(*args, **kwargs)
    return run


def instrument(engine: ArbitraryStylizer) -> None:
    """Wrap the parts in place (this process only; the diagnostic's own engine)."""
    model = engine.model
    if engine.openvino is not None:
        engine.openvino.encode = wrapped(engine.openvino.encode, "encoder (VGG)")
        engine.openvino.decode = wrapped(engine.openvino.decode, "decoder")
        engine.openvino.transfer_one = wrapped(engine.openvino.transfer_one, "attention blocks (OpenVINO, all levels)")
    else:
        model.encode = wrapped(model.encode, "encoder (VGG)")
        model.decode = wrapped(model.decode, "decoder")
    model.key_features = wrapped(model.key_features, lambda feats, level: f"{level} key features")
    for level, block in model.transfer.items():
        block.forward = wrapped(block.forward, f"{level} norm + FFN")
        block.statistics = wrapped(block.statistics, f"{level} attention statistics")
    engine_module.remove_grid = wrapped(engine_module.remove_grid, "degrid")
    engine_module.palette_transport = wrapped(engine_module.palette_transport, "palette transport")
    engine._final_palette = wrapped(engine._final_palette, "last palette share (aimed)")
    # Inside it, on the CPU form: the full transport and the two images' palette measure.
    palette_share_numpy.moved_numpy = wrapped(palette_share_numpy.moved_numpy, "  aimed share: full transport")
    palette_share_numpy.measure_quantiles_numpy = wrapped(palette_share_numpy.measure_quantiles_numpy,
                                                          "  aimed share: both palette measures")
    engine_module.downscale = wrapped(engine_module.downscale, "resize down")
    engine_module.upscale_styled = wrapped(engine_module.upscale_styled, "resize up + detail")
    transfer_module.attention = wrapped(transfer_module.attention, "attention core (softmax·V)")


def report(title: str, total: tuple[float, float], calls: int) -> None:
    cpu_total, wall_total = (t / calls * 1e3 for t in total)
    print(f"\n{title}: CPU {cpu_total:.0f} ms, wall {wall_total:.0f} ms per call ({calls} calls)")
    print(f"{'part':38} {'CPU ms':>8} {'wall ms':>8} {'share':>6} {'runs':>5}")
    booked_cpu = booked_wall = 0.0
    for name, (c, w, n) in sorted(SPENT.items(), key=lambda kv: -kv[1][0]):
        c, w = c / calls * 1e3, w / calls * 1e3
        booked_cpu, booked_wall = booked_cpu + c, booked_wall + w
        print(f"{name:38} {c:8.0f} {w:8.0f} {c / cpu_total:6.1%} {n // calls:5d}")
    print(f"{'other (Python, padding, copies)':38} {cpu_total - booked_cpu:8.0f} {wall_total - booked_wall:8.0f} "
          f"{(cpu_total - booked_cpu) / cpu_total:6.1%}")


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True)
    parser.add_argument("--painting", required=True)
    parser.add_argument("--backend", default="openvino")
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--stroke-scale", type=float, default=1.0, help="1: the model at 512 px")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = ArbitraryStylizer(StylizeOptions(device="cpu", backend=args.backend, precision=args.precision,
                                              passes=args.passes, stroke_scale=args.stroke_scale))
    print(f"{engine.describe()}; torch threads {torch.get_num_threads()}; "
          f"load {os.getloadavg()[0]:.2f}; ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '-')}")
    if engine.openvino is not None:
        from styleforge.engine.openvino_runner import cpu_report
        print(cpu_report())
    instrument(engine)
    photo = load_photo(args.photo)
    c0, w0 = time.process_time(), time.perf_counter()
    stylizer = engine.bind([(args.painting, 1.0)])
    report("painting's encoding (first frame only)", (time.process_time() - c0, time.perf_counter() - w0), 1)
    stylizer(photo)   # warm-up: OpenVINO's first inference at a new shape compiles its kernels
    SPENT.clear()
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(args.reps):
        stylizer(photo)
    report(f"one {tuple(photo.shape[-2:])} call, {args.passes} pass(es)",
           (time.process_time() - c0, time.perf_counter() - w0), args.reps)


if __name__ == "__main__":
    main()
