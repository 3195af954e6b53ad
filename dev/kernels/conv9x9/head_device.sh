# Session 13, one device call: the head on wgmma (csrc/cuda/conv9x9_head_sm90.cu). Build, the conv9x9
# and norm-sums GPU tests (every head test now runs the wgmma kernel; some run the mma.sync one
# too), the head's profiler durations with either kernel (STYLEFORGE_HEAD_KERNEL), the 512² frame
# timeline, the plan timings with either kernel, compute-sanitizer memcheck and racecheck on the
# conv9x9 sweep, and the engine's GPU tests.
#   bash dev/kernels/conv9x9/head_device.sh   (writes under $OUT)
DEVICE_TOPIC=head
source dev/kernels/device_preamble.sh
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv9x9.py tests/test_kernels_norm_sums.py \
  >"$OUT/gpu_conv9x9.log" 2>&1
grep -E "^FAILED|^E  .{0,200}|passed|failed" "$OUT/gpu_conv9x9.log" | head -20
timeout 90 python3 dev/kernels/conv9x9/durations.py head 2>&1 | grep -E " us|rror" | cut -c1-200
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -1 | cut -c1-300
python3 dev/kernels/conv3x3/print_frame.py "$OUT/profile_frame.json"
for k in auto mma; do
  STYLEFORGE_HEAD_KERNEL=$k timeout 100 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT/plan_$k" --frames-only 2>&1 \
    | grep frame | sed "s/^/$k /" | cut -c1-260
done
sanitize conv9x9 memcheck 150 --leak-check no python3 dev/kernels/conv9x9/sanitize.py
sanitize conv9x9 racecheck 120 python3 dev/kernels/conv9x9/sanitize.py --quick
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_fused_engine.py tests/test_kernels_attention.py \
  >"$OUT/gpu_others.log" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/gpu_others.log" | head -20
