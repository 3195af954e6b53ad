"""Both conv9x9 kernels on the GPU at small, awkward shapes, for compute-sanitizer.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python3 dev/kernels/conv9x9/sanitize.py
    compute-sanitizer --tool racecheck python3 dev/kernels/conv9x9/sanitize.py --quick

(without the caching allocator every tensor is its own cudaMalloc, so memcheck sees any overrun
of x, weight, bias or out). Covers conv1 and deconv3 (bf16 and fp16 output, fp32 output),
with and without bias, tails in H and W, 1×1 outputs, N = 1..3, and more tiles than resident
blocks (persistent loop). Each call is also checked against the fp32 twin; the exit code is
non-zero on any mismatch. Not a pytest module (run_device.sh runs it).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels
from styleforge.kernels import reference_conv

OP = torch.ops.styleforge.conv9x9.default
LAYERS = {"conv1": (3, 32), "deconv3": (32, 3)}


def check(layer, n, h, w, dtype, bias, out_float32, failures):
    cin, cout = LAYERS[layer]
    g = torch.Generator(device="cuda").manual_seed(n * 1000 + h * 10 + w)
    x = (torch.rand(n, cin, h + 8, w + 8, generator=g, device="cuda") * (255 if cin == 3 else 2)).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    weight = (torch.randn(cout, cin, 9, 9, generator=g, device="cuda") / (cin * 81) ** 0.5).to(dtype)
    b = torch.randn(cout, generator=g, device="cuda") if bias else None
    out = OP(x, weight, b, out_float32)
    want = reference_conv.conv9x9(x, weight, b, out_float32)
    err = float((out.double() - want.double()).norm() / want.double().norm().clamp_min(1e-30))
    limit = 1e-5 if out_float32 else 4e-3
    label = f"{layer} N={n} {h}x{w} {dtype} bias={bias} fp32_out={out_float32}"
    if not err <= limit or torch.isnan(out).any():
        failures.append(f"{label}: rel err {err:.3g}")


def main(quick: bool) -> int:
    ok, reason = kernels.cuda_kernels_available()
    if not ok:
        sys.stderr.write(f"CUDA kernels unavailable: {reason}\n")
        return 2
    shapes = [(1, 1, 1), (2, 17, 33), (1, 9, 70)] if quick else \
        [(1, 1, 1), (2, 17, 33), (1, 9, 70), (3, 7, 5), (1, 40, 129), (1, 100, 3)]
    dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float16)
    failures: list[str] = []
    calls = 0
    for dtype in dtypes:
        for n, h, w in shapes:
            for bias in (True, False):
                check("conv1", n, h, w, dtype, bias, False, failures)
                check("deconv3", n, h, w, dtype, bias, False, failures)
                check("deconv3", n, h, w, dtype, bias, True, failures)
                calls += 3
    # More tiles than resident blocks: the persistent loop runs several tiles per block.
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    check("conv1", 1, 8 * 3, 64 * sms, torch.bfloat16, False, False, failures)
    check("deconv3", 1, 16 * 3, 32 * sms, torch.bfloat16, True, True, failures)
    torch.cuda.synchronize()
    print(f"{calls + 2} calls, {len(failures)} failures")
    for line in failures:
        print("FAIL", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main("--quick" in sys.argv))
