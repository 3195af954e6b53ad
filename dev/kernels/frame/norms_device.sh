# One device call: the 512², 1080p and 4K frames with the in-kernel norm hand-off on different sets
# of norms (STYLEFORGE_INKERNEL_NORMS), plan timer per frame (bench_layer --all-frames).
DEVICE_TOPIC=norms
source dev/kernels/device_preamble.sh
for sites in "in1,in2,in3,in4,in5" "in1,in2" "in1" "in1,in2,in3"; do
  echo "== $sites"
  STYLEFORGE_INKERNEL_NORMS=$sites timeout 100 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" --all-frames --frames-only 2>&1 \
    | grep '"frame"' | grep -v '"chain": "off"' | python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line[line.index('{'):])
    print(r['frame'], r['dtype'], r['chosen'], ' '.join(f'{k} {v:.4f}' for k, v in r['plan_ms'].items()))"
done
