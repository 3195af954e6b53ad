# One device call: Nsight Compute (full set, per-SASS-line stall samples) on the kernels whose names
# match REGEX among those SCRIPT launches inside its profiler capture range (cudaProfilerStart/Stop):
# the details page, the hottest SASS lines (frame/hot_sass.py) and the per-line CSV (gzipped), under
# $OUT/NAME_*; prints the headline metrics.
#   bash dev/kernels/ncu_device.sh NAME REGEX SCRIPT [ARGS...]
#   e.g. bash dev/kernels/ncu_device.sh chain residual_chain dev/kernels/conv3x3/chain_ncu.py
#        bash dev/kernels/ncu_device.sh conv1 rgb dev/kernels/conv9x9/conv1_ncu.py
#        bash dev/kernels/ncu_device.sh conv2 conv3x3_kernel dev/kernels/conv3x3/conv2_durations.py --once
NAME=$1 REGEX=$2
shift 2
DEVICE_TOPIC=ncu_$NAME
source dev/kernels/device_preamble.sh
timeout 400 ncu --profile-from-start off --kernel-name regex:"$REGEX" --set full -o "$OUT/$NAME" \
  python3 "$@" > "$OUT/${NAME}_ncu_run.log" 2>&1
tail -3 "$OUT/${NAME}_ncu_run.log"
ncu -i "$OUT/$NAME.ncu-rep" --page details > "$OUT/${NAME}_details.txt" 2>&1
ncu -i "$OUT/$NAME.ncu-rep" --page source --csv --print-source sass > "$OUT/${NAME}_source.csv" 2> "$OUT/${NAME}_source.err"
python3 dev/kernels/frame/hot_sass.py "$OUT/${NAME}_source.csv" > "$OUT/${NAME}_hot_sass.txt" 2>&1
gzip -f "$OUT/${NAME}_source.csv"
rm -f "$OUT/$NAME.ncu-rep"
grep -E "^  [a-z_].*\(|Duration|Issue Slots Busy|L1/TEX Cache Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Issued Instructions  " \
  "$OUT/${NAME}_details.txt" | head -40
