# Session 10, one device call: the sums hand-off (each layer forms its input norm's affine from its
# producer's fp64 sums) and the persistent conv2/deconv2 grids. Build, the GPU tests of the changed
# modules, the 512² frame timeline, and the 256² / 512² plan timings with the hand-off on and off.
#   bash dev/kernels/frame/sums_device.sh   (writes under $OUT)
DEVICE_TOPIC=sums
source dev/kernels/device_preamble.sh
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_norm_sums.py tests/test_kernels_conv3x3.py \
  tests/test_kernels_conv9x9.py tests/test_fused_engine.py >"$OUT/gpu_tests.log" 2>&1
grep -E "^FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -30
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -2 | cut -c1-300
python3 dev/kernels/conv3x3/print_frame.py "$OUT/profile_frame.json"
for s in 0 1; do
  STYLEFORGE_SUMS_HANDOFF=$s timeout 90 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT/sums$s" --frames-only 2>&1 \
    | grep frame | cut -c1-260
done
