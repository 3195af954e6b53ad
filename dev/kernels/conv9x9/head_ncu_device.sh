# One device call: Nsight Compute (full set, SASS-level stall samples) on the two head kernels at
# 512² and 4K (head_ncu.py), the details page and the hottest SASS lines.
#   bash dev/kernels/conv9x9/head_ncu_device.sh   (writes under $OUT)
DEVICE_TOPIC=head_ncu
source dev/kernels/device_preamble.sh
timeout 400 ncu --profile-from-start off --kernel-name regex:'head' --set full -o "$OUT/head" \
  python3 dev/kernels/conv9x9/head_ncu.py > "$OUT/ncu_run.log" 2>&1
tail -3 "$OUT/ncu_run.log"
ncu -i "$OUT/head.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1
ncu -i "$OUT/head.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_source.csv" 2> "$OUT/ncu_source.err"
python3 dev/kernels/frame/hot_sass.py "$OUT/ncu_source.csv" > "$OUT/hot_sass.txt" 2>&1
gzip -f "$OUT/ncu_source.csv"; rm -f "$OUT/head.ncu-rep"
grep -E "^  [a-z_].*head|Duration|Shared Memory|Issue Slots Busy|Compute \(SM\) Throughput|Memory Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" "$OUT/ncu_details.txt" | head -60
