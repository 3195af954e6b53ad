"""Attention op vs `F.scaled_dot_product_attention`, timed with CUDA events.

    python3 dev/kernels/attention/timings.py --out timings.json

The issue's (B, H, N, D=64) shapes, plus D=32/128 and a cross-attention and a masked case, in
bf16 (ours vs SDPA bf16) and fp32 (ours with fp32_via_bf16=True vs SDPA fp32): warm-up, then
the median of 20 timed calls per provider; prints µs, TFLOP/s (4·B·H·Nq·Nk·D), the speedup
(SDPA time / ours) next to the issue's H200 anchors and target, and our error against SDPA's
fp32 result. Writes the rows as JSON. Not a pytest module (run_device.sh runs it).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels
from styleforge.engine.choices import median_ms

REPS = 20
# (label, B, H, Nq, Nk, D, masked) → the H200 anchors for SDPA, µs (bf16, fp32)
SHAPES = [
    ("32x12x197", 32, 12, 197, 197, 64, False),
    ("32x12x577", 32, 12, 577, 577, 64, False),
    ("32x12x1025", 32, 12, 1025, 1025, 64, False),
    ("1x8x4096", 1, 8, 4096, 4096, 64, False),
    ("8x8x1024 D=32", 8, 8, 1024, 1024, 32, False),
    ("8x8x1024 D=128", 8, 8, 1024, 1024, 128, False),
    ("cross 16x8x256<-4096", 16, 8, 256, 4096, 64, False),
    ("32x12x577 masked", 32, 12, 577, 577, 64, True),
]
ANCHORS = {"32x12x197": (28.7, 203), "32x12x577": (116, 1172), "32x12x1025": (334, 3272), "1x8x4096": (79, 1129)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("attention_timings.json"))
    args = parser.parse_args()
    ok, reason = kernels.cuda_kernels_available()
    if not ok:
        sys.stderr.write(f"CUDA kernels unavailable: {reason}\n")
        return 2
    rows = []
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"{'shape':22} {'dtype':5} {'sdpa µs':>9} {'ours µs':>9} {'ours TF/s':>9} {'sdpa TF/s':>9} "
          f"{'speedup':>8} {'target':>7} {'anchor µs':>9} {'rel err':>8}")
    for dtype in (torch.bfloat16, torch.float32):
        for label, b, h, nq, nk, d, masked in SHAPES:
            g = torch.Generator(device="cuda").manual_seed(0)
            q = torch.randn(b, h, nq, d, generator=g, device="cuda").to(dtype)
            k, v = (torch.randn(b, h, nk, d, generator=g, device="cuda").to(dtype) for _ in range(2))
            mask = (torch.rand(b, nk, generator=g, device="cuda") < 0.2) if masked else None
            keep = None if mask is None else ~mask[:, None, None, :]
            scale = d ** -0.5
            fp32 = dtype == torch.float32

            def sdpa(q=q, k=k, v=v, keep=keep, scale=scale):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=scale)

            def ours(q=q, k=k, v=v, mask=mask, scale=scale, fp32=fp32):
                return kernels.attention(q, k, v, mask, scale, fp32_via_bf16=fp32)

            exact = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=keep, scale=scale)
            out = ours()
            err = float((out.float() - exact).norm() / exact.norm())
            t_sdpa, t_ours = median_ms(sdpa, REPS, warmup=3) * 1e3, median_ms(ours, REPS, warmup=3) * 1e3
            flops = 4 * b * h * nq * nk * d
            anchor = ANCHORS.get(label, (None, None))[1 if fp32 else 0]
            target = 3.0 if fp32 else 0.9
            row = {"shape": label, "dtype": str(dtype).removeprefix("torch."), "sdpa_us": t_sdpa,
                   "ours_us": t_ours, "ours_tflops": flops / t_ours / 1e6, "sdpa_tflops": flops / t_sdpa / 1e6,
                   "speedup": t_sdpa / t_ours, "target": target, "anchor_us": anchor, "rel_err_vs_fp32": err,
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
            rows.append(row)
            print(f"{label:22} {row['dtype']:5} {t_sdpa:9.1f} {t_ours:9.1f} {row['ours_tflops']:9.1f} "
                  f"{row['sdpa_tflops']:9.1f} {row['speedup']:7.2f}x {target:6.1f}x "
                  f"{anchor if anchor is not None else '-':>9} {err:8.2e}")
            del q, k, v, out, exact
    args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
