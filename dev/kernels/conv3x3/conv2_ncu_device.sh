# One device call: Nsight Compute (full set, SASS-level stall samples) on conv2 as the engine calls it
# at 512² (conv2_durations.py --once: its first call): the details page and the hottest SASS lines.
#   bash dev/kernels/conv3x3/conv2_ncu_device.sh   (writes under $OUT)
DEVICE_TOPIC=conv2_ncu
source dev/kernels/device_preamble.sh
timeout 300 ncu --kernel-name regex:'conv3x3_kernel' --launch-count 1 --set full -o "$OUT/conv2" \
  python3 dev/kernels/conv3x3/conv2_durations.py --once > "$OUT/ncu_run.log" 2>&1
tail -3 "$OUT/ncu_run.log"
ncu -i "$OUT/conv2.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1
ncu -i "$OUT/conv2.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_source.csv" 2> "$OUT/ncu_source.err"
python3 dev/kernels/frame/hot_sass.py "$OUT/ncu_source.csv" > "$OUT/hot_sass.txt" 2>&1
gzip -f "$OUT/ncu_source.csv"; rm -f "$OUT/conv2.ncu-rep"
grep -E "Duration|Issue Slots Busy|L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput|Warp Cycles Per Issued|Achieved Occupancy|Issued Instructions  " "$OUT/ncu_details.txt" | head -12
