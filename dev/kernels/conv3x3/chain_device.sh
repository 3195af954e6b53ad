#!/usr/bin/env bash
# One device call for the residual chain (conv3x3_chain.cu): build, the whole GPU test suite,
# the chain-vs-links timings and the 256²/512² frames (512² also with the chain off), the 512² frame
# profile and the chain's phase profile (its own build), then memcheck and racecheck of the
# persistent kernel.
#   OUT=... bash dev/kernels/conv3x3/chain_device.sh
DEVICE_TOPIC=conv3x3
source dev/kernels/device_preamble.sh
timeout 240 python3 -m pytest -q tests -m gpu -p no:cacheprovider >"$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
timeout 120 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --chain-only 2>&1 | tee "$OUT/bench.log" | cut -c1-400
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -2
timeout 120 python3 dev/kernels/conv3x3/chain_profile.py --out "$OUT" --size 128 2>&1 | tail -1
for tool in memcheck racecheck; do
  sanitize chain $tool 100 python3 dev/kernels/conv3x3/sanitize_alone.py
done
