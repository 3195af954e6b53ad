# Session 9, one device call: the chain's resident tiles and conv2 at two CTAs per SM. Build, the
# GPU tests of the conv3x3 and engine modules, the chain's phase profile (its own build), the chain
# against the separate links, the 512² frame timeline and the per-frame plan timings.
#   bash dev/kernels/frame/resident_device.sh   (writes under $OUT)
DEVICE_TOPIC=resident
source dev/kernels/device_preamble.sh
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv3x3.py tests/test_fused_engine.py \
  >"$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
timeout 100 python3 dev/kernels/conv3x3/chain_profile.py --out "$OUT" --size 128 2>&1 | tail -1
timeout 60 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --chain-only --no-frames 2>&1 | tee "$OUT/bench_chain.log" | cut -c1-300
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -3
timeout 150 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --all-frames --frames-only 2>&1 | tee "$OUT/bench.log" | grep frame | cut -c1-300
