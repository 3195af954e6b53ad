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
    sanitize conv3x3 "$tool" 120 --kernel-name kns=conv3x3_kernel python3 -m pytest -q -x tests/test_kernels_conv3x3.py \
      -k "matches_float64 and odd and bfloat16 and affine_residual and not reference"
  done
fi
