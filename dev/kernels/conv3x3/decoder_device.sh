#!/usr/bin/env bash
# One device call for the decoder's end (deconv2 = conv3x3_norm 64 → 32 ×2, deconv3 = conv9x9's
# head): build, the GPU tests of the conv, engine and stylize modules, the 9×9 timings, the
# per-layer and frame timings (bench_layer, 1080p and 4K frames too), the 512² frame profile, then
# memcheck and racecheck of both ops alone.
#   OUT=... bash dev/kernels/conv3x3/decoder_device.sh
DEVICE_TOPIC=decoder
source dev/kernels/device_preamble.sh
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv9x9.py \
  tests/test_kernels_conv3x3.py tests/test_fused_engine.py tests/test_gpu_stylize.py >"$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
timeout 60 python3 dev/kernels/conv9x9/timings.py --out "$OUT/conv9x9_timings.json" 2>&1 | tail -14 | cut -c1-200
timeout 150 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --all-frames 2>&1 | tee "$OUT/bench.log" | cut -c1-300
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -2
for tool in memcheck racecheck; do
  sanitize conv3x3 $tool 60 python3 dev/kernels/conv3x3/sanitize_alone.py
  sanitize conv9x9 $tool 60 python3 dev/kernels/conv9x9/sanitize.py --quick
done
