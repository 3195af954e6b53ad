# Session 9, one device call after deconv2's two CTAs per SM (80 registers, the largest carveout):
# the conv3x3 and engine GPU tests, memcheck and racecheck of conv3x3_norm and the chain alone,
# Nsight Compute's launch and occupancy sections on the 512² frame's deconv2 (its fourth conv3x3
# kernel), the 512² frame timeline and the per-frame plan timings.
#   bash dev/kernels/frame/occupancy_device.sh   (writes under $OUT)
DEVICE_TOPIC=occupancy
source dev/kernels/device_preamble.sh
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv3x3.py tests/test_fused_engine.py \
  >"$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | head -20
for tool in memcheck racecheck; do
  sanitize conv3x3 $tool 150 python3 dev/kernels/conv3x3/sanitize_alone.py
done
timeout 120 ncu --profile-from-start off --kernel-name regex:'conv3x3_kernel' --launch-skip 3 --launch-count 1 \
  --section LaunchStats --section Occupancy --section SpeedOfLight python3 dev/kernels/frame/frame_probe.py 512x512 \
  > "$OUT/ncu_deconv2.txt" 2>&1
grep -E "conv3x3_kernel<|Duration|Registers Per|Shared Memory Config|Block Limit Reg|Block Limit Shared|Achieved Occupancy|Theoretical Occupancy|Waves" "$OUT/ncu_deconv2.txt" | head -20
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -1 | cut -c1-200
python3 - "$OUT/profile_frame.json" <<'PY'
import json, sys
for name, dur, start in json.load(open(sys.argv[1]))[-1]["rows"]:
    print(f"{start:7.1f} {dur:7.2f} end {start + dur:7.1f}  {name[38:80]}")
PY
timeout 150 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --all-frames --frames-only 2>&1 | tee "$OUT/bench.log" | grep frame | cut -c1-300
