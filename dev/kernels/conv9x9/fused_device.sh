#!/usr/bin/env bash
# One device call for the conv9x9 op's fused entry (pad + cast / IN5 on load) and the engine that
# uses it: the GPU tests of the 9×9 op, norm_scale_shift, the engine and end-to-end stylisation,
# the 512² frame profile and the frames of both plans, then memcheck and racecheck of the two
# 9×9 kernels on the fused calls.
#   OUT=... bash dev/kernels/conv9x9/fused_device.sh
DEVICE_TOPIC=conv9x9
source dev/kernels/device_preamble.sh
timeout 300 python3 -m pytest -q ${TESTS:-tests/test_kernels_conv9x9.py tests/test_kernels_conv3x3.py tests/test_fused_engine.py tests/test_gpu_stylize.py} \
  -m gpu -p no:cacheprovider -x -v >"$OUT/gpu_tests.log" 2>&1
grep -E "Fatal|FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
grep -B2 -A25 "Fatal Python error" "$OUT/gpu_tests.log" | head -60
timeout 150 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 | grep frame | tee "$OUT/frames.log"
timeout 90 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -2
for tool in memcheck racecheck; do
  sanitize conv9x9 "$tool" 120 python3 -m pytest -q -x tests/test_kernels_conv9x9.py -p no:cacheprovider \
    -k "fused_pad_norm and bfloat16 and small"
done
