#!/usr/bin/env bash
# The attention op on a GPU machine, in one go (run from the repo root):
#   bash dev/kernels/attention/run_device.sh
# 1. builds the extension (JIT, cached, shared with the other kernels; ~1–2 min the first time),
# 2. the op's GPU tests (tests/test_kernels_attention.py -m gpu),
# 3. compute-sanitizer memcheck (no caching allocator) and racecheck (quick sweep) on small,
# awkward shapes, 4. op vs F.scaled_dot_product_attention timings (CUDA events, median of 20),
# bf16 and fp32, with TFLOP/s. Logs and timings.json go to $OUT (default ./out/device-attention).
# Every step runs even if an earlier one fails; the summary lists each step's exit code.
# Budget: < 3 min after the build.
OUT_DEFAULT=out/device-attention
source "$(dirname "$0")/../steps.sh"

step build build.log 15 "$PY" -m styleforge build --verbose
step pytest pytest_gpu.log 40 "$PY" -m pytest -m gpu -q -p no:cacheprovider -rfEs tests/test_kernels_attention.py
SANITIZER="$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")"
if [ -x "$SANITIZER" ]; then
  step memcheck memcheck.log 15 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$SANITIZER" --tool memcheck \
    --leak-check no --error-exitcode 99 "$PY" dev/kernels/attention/sanitize.py
  step racecheck racecheck.log 15 "$SANITIZER" --tool racecheck --error-exitcode 99 \
    "$PY" dev/kernels/attention/sanitize.py --quick
else
  echo "compute-sanitizer not found (looked on PATH and in $SANITIZER); sanitizer steps skipped"
fi
step timings timings.log 40 "$PY" dev/kernels/attention/timings.py --out "$OUT/timings.json"

echo "=== summary (exit codes; 0 = ok)"
for name in build pytest memcheck racecheck timings; do echo "  $name: ${RC[$name]:-skipped}"; done
