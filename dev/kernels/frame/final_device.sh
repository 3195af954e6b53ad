# The session's last device calls: `styleforge bench` (e2e and ops) into $OUT/results and the full
# GPU suite (part 1); racecheck of the 9×9 kernels, conv9x9_norm included, run alone (part 2).
#   bash dev/kernels/frame/final_device.sh 1|2
DEVICE_TOPIC=final
source dev/kernels/device_preamble.sh
if [ "${1:-1}" = 1 ]; then
  cp -r benchmarks/results "$OUT/results"
  timeout 260 python3 -m styleforge bench --e2e --ops --output "$OUT/results" > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"
  timeout 280 python3 -m pytest -q -m gpu -p no:cacheprovider tests >"$OUT/gpu_tests.log" 2>&1
  grep -E "FAILED|passed|failed" "$OUT/gpu_tests.log" | head -12
else
  sanitize conv9x9 racecheck 400 python3 dev/kernels/conv9x9/sanitize.py --quick
fi
