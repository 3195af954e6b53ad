#!/usr/bin/env bash
# One device call: build, GPU tests of the op and the engine, the layer/frame probe, then
# compute-sanitizer memcheck and racecheck on one small case. From the repo root:
#   OUT=... bash dev/kernels/conv3x3/run_device.sh
DEVICE_TOPIC=conv3x3
source dev/kernels/device_preamble.sh
python3 -m pytest -q -x tests/test_kernels_conv3x3.py ${TESTS:-} 2>&1 | tail -15 | tee "$OUT/tests.log"
python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tail -30 | tee "$OUT/bench.log"
if [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck; do
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --tool "$tool" --kernel-name kns=conv3x3_kernel \
      --error-exitcode 99 python3 -m pytest -q -x tests/test_kernels_conv3x3.py -k "matches_float64 and odd and bfloat16 and affine_residual and not reference" \
      >"$OUT/$tool.log" 2>&1
    echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/$tool.log" | tail -4
  done
fi
