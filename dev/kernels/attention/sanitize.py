"""The attention kernel on the GPU at small, awkward shapes, for compute-sanitizer.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python3 dev/kernels/attention/sanitize.py
    compute-sanitizer --tool racecheck python3 dev/kernels/attention/sanitize.py --quick

(without the caching allocator every tensor is its own cudaMalloc, so memcheck sees any overrun
of q, k, v, the mask or out). Covers D = 32/64/128, bf16 and fp16, tails in Nq and Nk (1, 7, 65,
130 …), several key tiles (the cp.async double buffer), several q blocks, masks with a fully
masked batch, Nk = 0. Each call is also checked against the float64 twin; the exit code is
non-zero on any mismatch. Not a pytest module (dev/device/sanitize_all.sh runs it).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # sanitize_harness
from sanitize_harness import kernels_unavailable, report

from styleforge import kernels
from styleforge.engine.autotune import relative_error
from styleforge.kernels.reference import attention as reference_attention

kernels.register_ops()   # ops are defined on first use (kernels/library.py); this calls them directly

OP = torch.ops.styleforge.attention.default


def check(b, h, nq, nk, d, dtype, masked, failures):
    g = torch.Generator(device="cuda").manual_seed(b * 7 + nq * 3 + nk + d)
    q = torch.randn(b, h, nq, d, generator=g, device="cuda").to(dtype)
    k, v = (torch.randn(b, h, nk, d, generator=g, device="cuda").to(dtype) for _ in range(2))
    mask = None
    if masked:
        mask = torch.rand(b, nk, generator=g, device="cuda") < 0.3
        mask[-1] = True                                  # the last batch entry: every key masked
    out = OP(q, k, v, mask, d ** -0.5)
    want = reference_attention.attention(q.double(), k.double(), v.double(), mask, d ** -0.5)
    err = relative_error(out, want)
    label = f"B={b} H={h} Nq={nq} Nk={nk} D={d} {dtype} masked={masked}"
    if not err <= 2e-2 or torch.isnan(out).any():
        failures.append(f"{label}: rel err {err:.3g}")


def main(quick: bool) -> int:
    if kernels_unavailable():
        return 2
    shapes = [(1, 1, 1, 1), (2, 2, 65, 130), (1, 1, 130, 7)] if quick else \
        [(1, 1, 1, 1), (2, 2, 65, 130), (1, 1, 130, 7), (2, 3, 7, 200), (1, 2, 257, 64), (1, 1, 33, 0)]
    dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float16)
    failures: list[str] = []
    calls = 0
    for dtype in dtypes:
        for d in (32, 64, 128):
            for b, h, nq, nk in shapes:
                for masked in (False, True):
                    check(b, h, nq, nk, d, dtype, masked, failures)
                    calls += 1
    return report(calls, failures)


if __name__ == "__main__":
    sys.exit(main("--quick" in sys.argv))
