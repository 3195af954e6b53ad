"""Fused FFN op vs eager PyTorch and torch.compile, timed with CUDA events, with issue 7's targets.

    python3 dev/kernels/ffn/timings.py --out ffn_timings.json [--no-compile]

y = gelu(x·w1ᵀ + b1)·w2ᵀ + b2 + x at tokens 8192, (dim, hidden) = (512, 2048) and (768, 3072);
bf16 (tanh and erf GELU) and fp32 (exact, and the op's opt-in TF32 path). Per provider: warm-up,
then the median of 50 calls, each timed alone with CUDA events after a 256 MiB L2 flush. Prints
µs, TFLOP/s (2·2·T·d·h) and the speedup over eager in the same dtype, the relative L2 error vs
a float64 reference, and the targets: bf16 ≥ 0.95× eager, fp32 TF32 ≥ 3× eager fp32 (PyTorch's
default fp32 matmul is IEEE, no TF32). Writes the rows as JSON. Not a pytest module.
"""
from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge.kernels import ops_ffn, reference_ffn

SHAPES = ((8192, 512, 2048), (8192, 768, 3072))
REPS = 50


def median_us(fn, flush: torch.Tensor) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(REPS):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[REPS // 2]


def eager(x, w1, b1, w2, b2, gelu):
    return F.linear(reference_ffn.activation(F.linear(x, w1, b1), gelu), w2, b2) + x


def rel_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref).norm() / ref.norm())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("ffn_timings.json"))
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile provider")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.stderr.write("needs a CUDA device\n")
        return 2
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows, failures = [], []
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  cuda {torch.version.cuda}")
    print(f"{'shape':18} {'dtype':9} {'gelu':5} {'provider':16} {'µs':>9} {'TF/s':>7} {'×eager':>7} {'rel L2':>9}")
    variants = [(torch.bfloat16, "tanh", "ieee"), (torch.bfloat16, "erf", "ieee"),
                (torch.float32, "tanh", "ieee"), (torch.float32, "tanh", "tf32")]
    for tokens, d, h in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(0)
        x64 = torch.randn(tokens, d, generator=g, device="cuda", dtype=torch.float64)
        w1_64 = torch.randn(h, d, generator=g, device="cuda", dtype=torch.float64) / d ** 0.5
        w2_64 = torch.randn(d, h, generator=g, device="cuda", dtype=torch.float64) / h ** 0.5
        b1_64 = torch.randn(h, generator=g, device="cuda", dtype=torch.float64) * 0.5
        b2_64 = torch.randn(d, generator=g, device="cuda", dtype=torch.float64) * 0.5
        flops = 2 * 2 * tokens * d * h
        shape = f"{tokens}x{d}->{h}"
        for dtype, gelu, precision in variants:
            x, w1, b1, w2, b2 = (t.to(dtype) for t in (x64, w1_64, b1_64, w2_64, b2_64))
            ref = reference_ffn.ffn(*(t.double() for t in (x, w1, b1, w2, b2)), x.double(), gelu)
            providers = {"torch": partial(eager, x, w1, b1, w2, b2, gelu)}
            if not args.no_compile and precision == "ieee":
                providers["torch.compile"] = partial(torch.compile(eager, dynamic=False), x, w1, b1, w2, b2, gelu)
            name = "styleforge" + (".tf32" if precision == "tf32" else "")
            providers[name] = partial(ops_ffn.ffn, x, w1, b1, w2, b2, residual=x, gelu=gelu,
                                      fp32_precision=precision)
            base = None
            for provider, fn in providers.items():
                us = median_us(fn, flush)
                base = us if provider == "torch" else base
                err = rel_l2(fn(), ref)
                row = dict(shape=shape, dtype=str(dtype).removeprefix("torch."), gelu=gelu, provider=provider,
                           us=round(us, 2), tflops=round(flops / us / 1e6, 1), speedup=round(base / us, 3),
                           rel_l2=err, device=torch.cuda.get_device_name(), torch=torch.__version__)
                rows.append(row)
                print(f"{shape:18} {row['dtype']:9} {gelu:5} {provider:16} {us:9.1f} {row['tflops']:7.1f} "
                      f"{row['speedup']:7.3f} {err:9.2e}")
                if provider == "styleforge" and dtype == torch.bfloat16 and gelu == "tanh" and base / us < 0.95:
                    failures.append(f"{shape} bf16: {base / us:.3f}× eager < 0.95×")
                if provider == "styleforge.tf32" and base / us < 3.0:
                    failures.append(f"{shape} fp32 tf32: {base / us:.2f}× eager fp32 < 3×")
    args.out.write_text(json.dumps(rows, indent=1))
    print("targets:", "all met" if not failures else "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
