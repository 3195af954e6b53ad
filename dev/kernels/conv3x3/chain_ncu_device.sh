# One device call: Nsight Compute (full set, SASS-level stall samples) on one residual-chain launch
# at the 128² plane (chain_ncu.py): the details page, the hottest SASS lines and the per-line CSV.
#   bash dev/kernels/conv3x3/chain_ncu_device.sh   (writes under $OUT)
DEVICE_TOPIC=chain_ncu
source dev/kernels/device_preamble.sh
timeout 300 ncu --profile-from-start off --kernel-name regex:'residual_chain' --set full -o "$OUT/chain" \
  python3 dev/kernels/conv3x3/chain_ncu.py > "$OUT/ncu_run.log" 2>&1
tail -3 "$OUT/ncu_run.log"
ncu -i "$OUT/chain.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1
ncu -i "$OUT/chain.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_source.csv" 2> "$OUT/ncu_source.err"
python3 dev/kernels/frame/hot_sass.py "$OUT/ncu_source.csv" > "$OUT/hot_sass.txt" 2>&1
gzip -f "$OUT/ncu_source.csv"; rm -f "$OUT/chain.ncu-rep"
grep -E "Duration|Issue Slots Busy|L1/TEX Cache Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Issued Instructions  " "$OUT/ncu_details.txt" | head -12
