#!/usr/bin/env bash
# One device call after the hand-off kernel's change (a block per (sample, channel)): the GPU tests
# of the conv, norm, engine and stylize modules, the per-layer and frame timings (1080p and 4K
# frames too), the 512² frame profile, memcheck and racecheck of conv3x3_norm (with its hand-off)
# and of the 9×9 head alone, and Nsight Compute's view of the head at 512².
#   OUT=... bash dev/kernels/conv3x3/handoff_device.sh
DEVICE_TOPIC=handoff
source dev/kernels/device_preamble.sh
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv3x3.py \
  tests/test_fused_engine.py tests/test_gpu_stylize.py >"$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
timeout 150 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --all-frames 2>&1 | tee "$OUT/bench.log" | grep frame | cut -c1-300
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512,1080x1920 2>&1 | tail -2
for tool in memcheck racecheck; do
  sanitize conv3x3 $tool 60 python3 dev/kernels/conv3x3/sanitize_alone.py
done
sanitize conv9x9 racecheck 200 python3 dev/kernels/conv9x9/sanitize.py --quick
timeout 90 ncu --kernel-name regex:head_kernel --launch-skip 3 --launch-count 1 --set full \
  python3 dev/kernels/conv9x9/head_probe.py >"$OUT/ncu_head.txt" 2>&1
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc Active|Achieved Occupancy|Registers Per|Stall|L1/TEX Hit|Bank" "$OUT/ncu_head.txt" | head -30
