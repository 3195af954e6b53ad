"""Every option path of styleforge::instance_norm on the GPU, small, for compute-sanitizer.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python3 dev/kernels/instance_norm/sanitize.py
    compute-sanitizer --tool racecheck python3 dev/kernels/instance_norm/sanitize.py --quick

(without the caching allocator every tensor is its own cudaMalloc, so memcheck sees any
overrun). Each call is also checked against the fp32 twin, so a run doubles as a correctness
sweep; the exit code is non-zero on any mismatch. Covers: 3 dtypes × NCHW/channels_last ×
ReLU × residual (none, contiguous, padded interior, other layout) × pad 0/1/4 × upsample 1/2 ×
affine on/off, plus misaligned x, C=3, C=264 (two channel tiles), 1×1 planes, a plane split
over many blocks, and rows beyond grid.y. Not a pytest module (the device script runs it).
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # sanitize_harness
from sanitize_harness import kernels_unavailable

from styleforge import kernels
from styleforge.engine.autotune import relative_error
from styleforge.kernels.reference import instance_norm as reference

kernels.register_ops()   # ops are defined on first use (kernels/library.py); this calls them directly

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
OP = torch.ops.styleforge.instance_norm.default


def make(shape, dtype, channels_last, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(shape, generator=g, device="cuda") * 20 + 50).to(dtype)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def residual_for(kind, x):
    n, c, h, w = x.shape
    cl = not x.is_contiguous()
    if kind == "contiguous":
        return make(x.shape, x.dtype, cl, 11)
    if kind == "interior":
        return make((n, c, h + 2, w + 2), x.dtype, cl, 12)[..., 1:-1, 1:-1]
    if kind == "other-layout":
        return make(x.shape, x.dtype, not cl, 13)
    return None


def check(label, x, weight, bias, residual, relu, pad, upsample, failures):
    out = OP(x, weight, bias, residual, 1e-5, relu, pad, upsample)
    want = reference.instance_norm(x, weight, bias, residual, 1e-5, relu, pad, upsample)
    err = relative_error(out, want)
    limit = 1e-6 if x.dtype == torch.float32 else 4e-3
    if not err <= limit or torch.isnan(out).any():
        failures.append(f"{label}: rel err {err:.3g}")


def main(quick: bool) -> int:
    if kernels_unavailable():
        return 2
    failures: list[str] = []
    # NCHW takes the three launches, channels_last the single launch (batch 1 and 2).
    shapes = ((2, 16, 7, 10), (1, 16, 9, 6))
    residuals = ("interior", "other-layout") if quick else (None, "contiguous", "interior", "other-layout")
    pads = (1,) if quick else (0, 1, 4)
    for dtype, cl, shape in itertools.product(DTYPES, (False, True), shapes):
        x = make(shape, dtype, cl, 1)
        weight, bias = torch.rand(16, device="cuda") + 0.5, torch.randn(16, device="cuda")
        for relu, res, pad, up, affine in itertools.product((False, True), residuals, pads, (1, 2), (False, True)):
            label = f"{shape} {dtype} cl={cl} relu={relu} res={res} pad={pad} up={up} affine={affine}"
            check(label, x, weight if affine else None, bias if affine else None, residual_for(res, x),
                  relu, pad, up, failures)
    for dtype in DTYPES:
        base = make((1 + 2 * 16 * 5 * 7,), dtype, False, 2)
        check(f"misaligned nchw {dtype}", base[1:].view(2, 16, 5, 7), None, None, None, True, 2, 1, failures)
        check(f"misaligned cl {dtype}", base[1:].view(2, 5, 7, 16).permute(0, 3, 1, 2), None, None, None,
              False, 1, 2, failures)
        for c, cl in ((3, True), (264, True), (3, False)):
            x = make((2, c, 6, 5), dtype, cl, 3)
            check(f"C={c} cl={cl} {dtype}", x, torch.rand(c, device="cuda"), None, residual_for("interior", x),
                  True, 1, 2, failures)
        check(f"1x1 planes {dtype}", make((2, 8, 1, 1), dtype, False, 4), None, torch.randn(8, device="cuda"),
              None, True, 0, 1, failures)
        check(f"1x1 planes upsampled {dtype}", make((2, 8, 1, 1), dtype, True, 4), None, None, None, False, 1, 2,
              failures)
        for cl in (False, True):
            x = make((1, 32, 128, 192), dtype, cl, 5)
            check(f"split plane cl={cl} {dtype}", x, None, None, residual_for("interior", x), True, 4, 1, failures)
    if not quick:
        check("rows beyond grid.y nchw", make((1, 70000, 1, 1), torch.float32, False, 6), None, None, None,
              False, 0, 1, failures)
        check("rows beyond grid.y cl", make((1, 8, 70000, 2), torch.bfloat16, True, 6), None, None, None,
              False, 1, 1, failures)
    torch.cuda.synchronize()
    for line in failures:
        sys.stderr.write(f"MISMATCH {line}\n")
    sys.stdout.write(f"sanitize.py: {'quick' if quick else 'full'} sweep done, {len(failures)} mismatches\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main("--quick" in sys.argv[1:]))
