# One device call: Nsight Compute on the 512² frame's rgb, conv3x3 and head kernels (full set,
# per-SASS-instruction stall samples), their SASS, and the frame's kernel timeline.
#   bash dev/kernels/frame/ncu_device.sh   (writes under $OUT)
DEVICE_TOPIC=frame
source dev/kernels/device_preamble.sh
ncu --profile-from-start off --kernel-name regex:'rgb_kernel|head_kernel|conv3x3_kernel' --set full \
    -o "$OUT/frame" python3 dev/kernels/frame/frame_probe.py 512x512 > "$OUT/ncu_run.log" 2>&1
tail -5 "$OUT/ncu_run.log"
ncu -i "$OUT/frame.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1
ncu --help | grep -i -A2 "print-source\|page " > "$OUT/ncu_help.txt" 2>&1
ncu -i "$OUT/frame.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_source.csv" 2> "$OUT/ncu_source.err"
ls -la "$OUT"
python3 dev/kernels/frame/hot_sass.py "$OUT/ncu_source.csv" > "$OUT/hot_sass.txt" 2>&1; head -c 3000 "$OUT/hot_sass.txt"
so=$(find /tmp/sfcache -name '*.so' | head -1)
cuobjdump -sass "$so" > "$OUT/all.sass" 2>&1; gzip -f "$OUT/all.sass"
python3 dev/kernels/conv3x3/profile_frame.py --sizes 512x512 --out "$OUT" 2>&1 | tail -3
