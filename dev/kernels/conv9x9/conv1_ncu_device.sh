# One device call: Nsight Compute (full set, SASS-level stall samples) on conv1's wgmma kernel at 512²,
# without and with IN1's statistics (conv1_ncu.py): the details page and the hottest SASS lines.
#   bash dev/kernels/conv9x9/conv1_ncu_device.sh   (writes under $OUT)
DEVICE_TOPIC=conv1_ncu
source dev/kernels/device_preamble.sh
timeout 300 ncu --profile-from-start off --kernel-name regex:'rgb' --set full -o "$OUT/conv1" \
  python3 dev/kernels/conv9x9/conv1_ncu.py > "$OUT/ncu_run.log" 2>&1
tail -3 "$OUT/ncu_run.log"
ncu -i "$OUT/conv1.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1
ncu -i "$OUT/conv1.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_source.csv" 2> "$OUT/ncu_source.err"
python3 dev/kernels/frame/hot_sass.py "$OUT/ncu_source.csv" > "$OUT/hot_sass.txt" 2>&1
gzip -f "$OUT/ncu_source.csv"; rm -f "$OUT/conv1.ncu-rep"
grep -E "^  [a-z_].*rgb|Duration|Issue Slots Busy|L1/TEX Cache Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Issued Instructions  " "$OUT/ncu_details.txt" | head -40
timeout 60 python3 dev/kernels/conv9x9/durations.py conv1 2>&1 | grep " us"
