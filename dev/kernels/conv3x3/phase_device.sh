#!/usr/bin/env bash
# One device call for the phase-split ×2 decoder convolutions: the conv3x3 and engine GPU tests,
# the layer/frame probe and the 512² profile, then memcheck and racecheck of that configuration.
#   OUT=... bash dev/kernels/conv3x3/phase_device.sh
DEVICE_TOPIC=conv3x3
source dev/kernels/device_preamble.sh
timeout 300 python3 -m pytest -q tests/test_kernels_conv3x3.py tests/test_fused_engine.py tests/test_gpu_stylize.py \
  -m gpu -p no:cacheprovider >"$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
timeout 150 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" 2>&1 | grep frame | tee "$OUT/frames.log"
timeout 90 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -2
sel="(decoder_conv3x3_norm_matches_float64 or strided_conv3x3_norm_matches_float64) and odd and bfloat16 and affine_residual"
sanitize phase memcheck 150 --kernel-name kns=conv3x3_kernel \
  python3 -m pytest -q -x tests/test_kernels_conv3x3.py -p no:cacheprovider -k "$sel"
# Racecheck on our kernels alone: the GPU tests also run cuDNN, which racecheck cannot follow.
sanitize phase racecheck 150 python3 dev/kernels/conv3x3/sanitize_alone.py
