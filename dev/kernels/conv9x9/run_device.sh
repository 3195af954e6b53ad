#!/usr/bin/env bash
# The conv9x9 op (conv1 3→32, deconv3 32→3) on a GPU machine, in one go (run from the repo root):
#   bash dev/kernels/conv9x9/run_device.sh
# 1. builds the extension (JIT, cached, shared with instance_norm; ~1–2 min the first time),
# 2. the op's GPU tests and the fused engine's (which now times the op against cuDNN per shape),
# 3. compute-sanitizer memcheck (no caching allocator) and racecheck (quick sweep) on both kernels
# with tails, 4. op vs cuDNN timings (CUDA events, median of 20) at 512², 1080p, 4K, bf16 and
# fp16, with TFLOP/s. Logs and timings.json go to $OUT (default ./out/device-conv9x9). Every step
# runs even if an earlier one fails; the summary lists each step's exit code. Budget: < 4 min.
OUT_DEFAULT=out/device-conv9x9
source "$(dirname "$0")/../steps.sh"

step build build.log 15 "$PY" -m styleforge build --verbose
step pytest pytest_gpu.log 40 "$PY" -m pytest -m gpu -q -p no:cacheprovider -rfEs \
  tests/test_kernels_conv9x9.py tests/test_fused_engine.py
SANITIZER="$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")"
if [ -x "$SANITIZER" ]; then
  step memcheck memcheck.log 15 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$SANITIZER" --tool memcheck \
    --leak-check no --error-exitcode 99 "$PY" dev/kernels/conv9x9/sanitize.py
  step racecheck racecheck.log 15 "$SANITIZER" --tool racecheck --error-exitcode 99 \
    "$PY" dev/kernels/conv9x9/sanitize.py --quick
else
  echo "compute-sanitizer not found (looked on PATH and in $SANITIZER); sanitizer steps skipped"
fi
step timings timings.log 40 "$PY" dev/kernels/conv9x9/timings.py --out "$OUT/timings.json"
step engine engine.log 10 "$PY" -c "
import torch
from styleforge.engine.fused import FusedRunner
from styleforge.models import TransformerNet
m = TransformerNet().eval()
for dtype in (torch.bfloat16, torch.float16):
    r = FusedRunner(m, torch.device('cuda'), dtype)
    r(torch.rand(1, 3, 1080, 1920, device='cuda') * 255)
    for key, c in r.layer_choices.items():
        print(dtype, key, c)
"

echo "=== summary (exit codes; 0 = ok)"
for name in build pytest memcheck racecheck timings engine; do echo "  $name: ${RC[$name]:-skipped}"; done
