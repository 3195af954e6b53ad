# Session 11, one device call: conv1 on wgmma (csrc/cuda/conv9x9_sm90.cu). Build, the conv9x9 GPU
# tests (every conv1 test now runs the wgmma kernel; one runs the mma.sync kernel), conv1 op timings
# with either kernel (STYLEFORGE_CONV1_KERNEL) and their profiler durations, the 512² frame timeline, the plan timings with
# either kernel, compute-sanitizer memcheck and racecheck on the conv9x9 sweep, and the GPU tests of
# the modules that call conv1 (norm sums, engine).
#   bash dev/kernels/conv9x9/sm90_device.sh   (writes under $OUT)
DEVICE_TOPIC=conv1
source dev/kernels/device_preamble.sh
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv9x9.py >"$OUT/gpu_conv9x9.log" 2>&1
grep -E "^FAILED|^E  .{0,200}|passed|failed" "$OUT/gpu_conv9x9.log" | head -20
for k in auto mma; do
  STYLEFORGE_CONV1_KERNEL=$k timeout 60 python3 dev/kernels/conv9x9/timings.py --out "$OUT/timings_$k.json" 2>&1 \
    | grep -iE "conv1|error" | sed "s/^/$k /" | cut -c1-200
done
timeout 60 python3 dev/kernels/conv9x9/durations.py conv1 2>&1 | grep " us"
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -1 | cut -c1-300
python3 dev/kernels/conv3x3/print_frame.py "$OUT/profile_frame.json"
for k in auto mma; do
  STYLEFORGE_CONV1_KERNEL=$k timeout 100 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT/plan_$k" --frames-only 2>&1 \
    | grep frame | sed "s/^/$k /" | cut -c1-260
done
sanitize conv9x9 memcheck 120 --leak-check no python3 dev/kernels/conv9x9/sanitize.py
sanitize conv9x9 racecheck 100 python3 dev/kernels/conv9x9/sanitize.py --quick
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_norm_sums.py tests/test_fused_engine.py \
  >"$OUT/gpu_others.log" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/gpu_others.log" | head -20
