# One device call after the in-kernel hand-offs (conv3x3_norm with a norm state, conv9x9_norm),
# conv2's Cin-32 halo and the 9×9 kernels' staging: the GPU tests of the conv, engine and stylize
# modules, memcheck and racecheck of the changed kernels run alone, the frame timeline at 512² and
# 1080p, and the per-frame plan timings.
#   bash dev/kernels/frame/validate_device.sh   (writes under $OUT)
DEVICE_TOPIC=validate
source dev/kernels/device_preamble.sh
timeout 280 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv3x3.py tests/test_kernels_conv9x9.py \
  tests/test_fused_engine.py tests/test_gpu_stylize.py >"$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512,1080x1920 2>&1 | tail -4
for tool in memcheck racecheck; do
  sanitize conv3x3 $tool 90 python3 dev/kernels/conv3x3/sanitize_alone.py
done
sanitize conv9x9 memcheck 100 python3 dev/kernels/conv9x9/sanitize.py --quick
timeout 170 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --all-frames 2>&1 | tee "$OUT/bench.log" | grep frame | cut -c1-300
