"""Both conv9x9 kernels on the GPU at small, awkward shapes, for compute-sanitizer.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python3 dev/kernels/conv9x9/sanitize.py
    compute-sanitizer --tool racecheck python3 dev/kernels/conv9x9/sanitize.py --quick

(without the caching allocator every tensor is its own cudaMalloc, so memcheck sees any overrun
of x, weight, bias or out). Covers conv1 and deconv3 (bf16 and fp16 output, fp32 output),
with and without bias, tails in H and W, 1×1 outputs, N = 1..3, and more tiles than resident
blocks (persistent loop); the head with its norm on load (scale/shift, and from a producer's
sums: conv9x9_from_sums, whose state must be left zero); and conv9x9_norm (conv1 with IN1's
statistics: the statistics epilogue's shared scratch and the hand-off's atomics), whose y must
equal conv9x9's and whose state must be left zero. Each call is also checked against the fp32 twin; the exit code is
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
from styleforge.kernels.reference import conv3x3 as reference_conv3x3
from styleforge.kernels.reference import conv9x9 as reference_conv
from styleforge.kernels.reference import norm_sums as reference_norm_sums

kernels.register_ops()   # ops are defined on first use (kernels/library.py); this calls them directly

OP = torch.ops.styleforge.conv9x9.default
NORM_OP = torch.ops.styleforge.conv9x9_norm.default
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
    err = relative_error(out, want)
    limit = 1e-5 if out_float32 else 4e-3
    label = f"{layer} N={n} {h}x{w} {dtype} bias={bias} fp32_out={out_float32}"
    if not err <= limit or torch.isnan(out).any():
        failures.append(f"{label}: rel err {err:.3g}")


def check_norm(n, h, w, dtype, failures):
    """conv9x9_norm on the fp32 image with pad 4 (the engine's call)."""
    g = torch.Generator(device="cuda").manual_seed(n * 1000 + h * 10 + w + 7)
    x = torch.rand(n, 3, h, w, generator=g, device="cuda") * 255
    weight = (torch.randn(32, 3, 9, 9, generator=g, device="cuda") / 243 ** 0.5).to(dtype)
    nw, nb = torch.rand(32, generator=g, device="cuda") + 0.5, torch.randn(32, generator=g, device="cuda")
    state = kernels.norm_state(n, 32, "cuda")
    y, scale, shift = NORM_OP(x, weight, 4, nw, nb, 1e-5, state)
    want_scale, want_shift = reference_conv3x3.norm_scale_shift(y, nw, nb, 1e-5)
    err = max(float((a - b).norm() / b.norm()) for a, b in ((scale, want_scale), (shift, want_shift)))
    label = f"conv9x9_norm N={n} {h}x{w} {dtype}"
    if not torch.equal(y, OP(x, weight, None, False, None, None, 4)):
        failures.append(f"{label}: y differs from conv9x9's")
    if not err <= 1e-4 or bool(state.any()):
        failures.append(f"{label}: statistics rel err {err:.3g}, state zero: {not state.any()}")
    # The engine's form: the weight pre-packed as the Hopper kernel's B image (session 15).
    y_packed, _, _ = NORM_OP(x, weight, 4, nw, nb, 1e-5, state, True, kernels.pack_conv1_weight(weight))
    if not torch.equal(y_packed, y):
        failures.append(f"{label}: y with the packed weight differs")


def check_head_norm(n, h, w, dtype, failures):
    """The head with its norm on load and pad 4, from (scale, shift) and from a producer's sums (the
    engine's conv9x9_from_sums), against the fp32 twin; the sums' state must be left zero."""
    g = torch.Generator(device="cuda").manual_seed(n * 1000 + h * 10 + w + 11)
    x = (torch.randn(n, 32, h, w, generator=g, device="cuda") * 3 + 5).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    weight = (torch.randn(3, 32, 9, 9, generator=g, device="cuda") / 51).to(dtype)
    b = torch.randn(3, generator=g, device="cuda")
    nw, nb = torch.rand(32, generator=g, device="cuda") + 0.5, torch.randn(32, generator=g, device="cuda") * 0.2
    scale, shift = reference_conv3x3.norm_scale_shift(x, nw, nb, 1e-5)
    want = reference_conv.conv9x9(x, weight, b, True, scale, shift, 4)
    state = kernels.norm_state(n, 32, "cuda")
    reference_norm_sums.add_sums(state, x)   # what deconv2's epilogue leaves
    outs = {"scale/shift": OP(x, weight, b, True, scale, shift, 4),
            "sums": kernels.conv9x9_from_sums(x, weight, b, state, out_float32=True, pad=4, norm_weight=nw,
                                              norm_bias=nb)}
    reference_norm_sums.add_sums(state, x)   # again, for the engine's form: the weight pre-packed
    outs["sums, packed weight"] = kernels.conv9x9_from_sums(x, weight, b, state, out_float32=True, pad=4,
                                                            norm_weight=nw, norm_bias=nb,
                                                            packed_weight=kernels.pack_head_weight(weight))
    torch.cuda.synchronize()
    for name, out in outs.items():
        err = float((out.double() - want.double()).norm() / want.double().norm())
        if not err <= 1e-3 or torch.isnan(out).any():
            failures.append(f"head from {name} N={n} {h}x{w} {dtype}: rel err {err:.3g}")
    if bool(state.any()):
        failures.append(f"head from sums N={n} {h}x{w} {dtype}: state not left zero")


def main(quick: bool) -> int:
    if kernels_unavailable():
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
    # The head with its norm: small and odd planes, samples, and more 16 × 32 tiles than resident
    # blocks (2 per SM), so blocks meet several tiles and samples.
    head_shapes = [(1, 5, 5), (2, 17, 70)] + ([] if quick else [(3, 9, 130), (2, 16 * 3, 64 * sms)])
    for n, h, w in head_shapes:
        check_head_norm(n, h, w, torch.bfloat16, failures)
    norm_shapes = [(1, 5, 5), (2, 17, 70)] + ([] if quick else [(3, 9, 130), (1, 8 * 3, 64 * sms)])
    for n, h, w in norm_shapes:
        check_norm(n, h, w, torch.bfloat16, failures)
    return report(calls + 2 + 2 * len(head_shapes) + len(norm_shapes), failures)


if __name__ == "__main__":
    sys.exit(main("--quick" in sys.argv))
