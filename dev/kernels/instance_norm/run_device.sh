#!/usr/bin/env bash
# The InstanceNorm op and fused engine on a GPU machine, in one go (run from the repo root):
#   bash dev/kernels/instance_norm/run_device.sh
# 1. builds the extension (JIT, cached; the first build takes ~1–2 min), 2. the GPU tests of the
# op and the engine, 3. compute-sanitizer memcheck (full sweep, no caching allocator) and
# racecheck (quick sweep) over every option path, 4. op and end-to-end timings with the copy
# bandwidth measured in the same run. Logs and timings.json go to $OUT (default
# ./out/device-instance-norm). Every step runs even if an earlier one fails; the summary at the
# end lists each step's exit code. Budget: ~5 minutes including the first build.
OUT_DEFAULT=out/device-instance-norm
source "$(dirname "$0")/../steps.sh"

step build build.log 15 "$PY" -m styleforge build --verbose
step pytest pytest_gpu.log 40 "$PY" -m pytest -m gpu -q -p no:cacheprovider -rfEs \
  tests/test_kernels_instance_norm.py tests/test_fused_engine.py
SANITIZER="$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")"
if [ -x "$SANITIZER" ]; then
  # No caching allocator under memcheck: every tensor is its own allocation, so overruns show.
  step memcheck memcheck.log 15 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$SANITIZER" --tool memcheck \
    --leak-check no --error-exitcode 99 "$PY" dev/kernels/instance_norm/sanitize.py
  step racecheck racecheck.log 15 "$SANITIZER" --tool racecheck --error-exitcode 99 \
    "$PY" dev/kernels/instance_norm/sanitize.py --quick
else
  echo "compute-sanitizer not found (looked on PATH and in $SANITIZER); sanitizer steps skipped"
fi
step timings timings.log 60 "$PY" dev/kernels/instance_norm/timings.py --out "$OUT/timings.json" ${TIMINGS_ARGS:-}

echo "=== summary (exit codes; 0 = ok)"
for name in build pytest memcheck racecheck timings; do echo "  $name: ${RC[$name]:-skipped}"; done
