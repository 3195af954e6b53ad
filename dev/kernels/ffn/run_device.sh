#!/usr/bin/env bash
# The fused FFN op (Linear → GELU → Linear + bias + residual) on a GPU machine, in one go:
#   bash dev/kernels/ffn/run_device.sh            (from the repo root; < 2 min)
# 1. its GPU tests (float64 references at tokens 8192, dim 512/768, hidden 4×, odd token counts,
# 3-D inputs; bf16/fp16 vs PyTorch's same-dtype error, fp32 exact, fp32 TF32 with its measured
# error printed), 2. timings vs eager and torch.compile (CUDA events, warm-up, median of 50) with
# issue 7's targets checked. No nvcc build: the op runs on PyTorch's cuBLASLt (see ops_ffn.py).
# Logs and timings.json go to $OUT (default ./out/device-ffn); every step runs even if an
# earlier one fails; the summary lists each step's exit code.
OUT_DEFAULT=out/device-ffn
source "$(dirname "$0")/../steps.sh"

step pytest pytest_gpu.log 30 "$PY" -m pytest -m gpu -q -s -p no:cacheprovider -rfEs tests/test_kernels_ffn.py
echo "largest measured TF32 errors:"
grep -o "tf32 [^ ]* [a-z]*: rel L2 error [0-9.e+-]*" "$OUT/pytest_gpu.log" | sort -k7 -g | tail -3
step timings timings.log 30 "$PY" dev/kernels/ffn/timings.py --out "$OUT/timings.json"

echo "=== summary (exit codes; 0 = ok)"
for name in pytest timings; do echo "  $name: ${RC[$name]:-skipped}"; done
