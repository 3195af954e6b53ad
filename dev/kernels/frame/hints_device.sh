# One device call: the activations' evict-first L2 hints (cache_hints.cuh) A/B at 256² and 512²
# (`styleforge bench --e2e`, fused bf16/fp16, built without the hints then with, twice, alternating),
# the frame tile by tile with and without them (frame_phases.py), and (`tests`) the GPU tests of the
# changed kernels' modules.
#   bash dev/kernels/frame/hints_device.sh [tests]
DEVICE_TOPIC=hints
source dev/kernels/device_preamble.sh
bench() {   # bench LABEL [FLAGS]
  local label=$1 flags=${2:-}
  if [ -n "$flags" ]; then
    timeout 150 python3 dev/kernels/frame/with_flags.py "$flags" -m styleforge bench --e2e --sizes 256,512 \
      --providers fused-bf16,fused-fp16 --reps 60 --output "$OUT/$label" > "$OUT/$label.log" 2>&1
  else
    timeout 150 python3 -m styleforge bench --e2e --sizes 256,512 --providers fused-bf16,fused-fp16 --reps 60 \
      --output "$OUT/$label" > "$OUT/$label.log" 2>&1
  fi
  echo "$label rc=$? $(grep -hE '^\|? *(256|512)' "$OUT/$label.log" | tr -s ' ' | tr '\n' ';' | cut -c1-400)"
}
bench off1 -DSF_NO_CACHE_HINTS=1
bench on1
bench off2 -DSF_NO_CACHE_HINTS=1
bench on2
for d in off1 on1 off2 on2; do echo "$d"; cat "$OUT/$d/e2e.csv" 2>/dev/null | cut -d, -f1-12 | tail -4; done
phases() {   # phases LABEL [FLAGS]
  local label=$1 flags=${2:-}
  if [ -n "$flags" ]; then
    timeout 200 python3 dev/kernels/frame/with_flags.py "$flags" dev/kernels/frame/frame_phases.py --out "$OUT/$label" \
      --size 512 > "$OUT/phases_$label.log" 2>&1
  else
    timeout 200 python3 dev/kernels/frame/frame_phases.py --out "$OUT/$label" --size 512 > "$OUT/phases_$label.log" 2>&1
  fi
  echo "phases $label rc=$?"; grep -vE "^   " "$OUT/phases_$label.log" | cut -c1-200 | head -8
}
phases on
phases off -DSF_NO_CACHE_HINTS=1
[ "${1:-}" = "tests" ] && timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv3x3.py \
  tests/test_kernels_conv9x9.py tests/test_fused_engine.py tests/test_kernels_norm_sums.py > "$OUT/gpu_tests.log" 2>&1 &&
  grep -E "FAILED|passed|failed" "$OUT/gpu_tests.log" | tail -5
