# The session's last device calls, each under the 600 s limit:
#   1: `styleforge bench` (e2e and ops) into $OUT/results, then 256² and 512² again (their eager fp32
#      rows are host-bound and noisy in the full run) into $OUT/rerun;
#   2: the full GPU suite, then compute-sanitizer memcheck on the 9×9 sweep;
#   3: racecheck on the 9×9 sweep, memcheck and racecheck on the residual chain alone.
#   bash dev/kernels/frame/final_device.sh 1|2|3
DEVICE_TOPIC=final
source dev/kernels/device_preamble.sh
case "${1:-1}" in
  1)
    cp -r benchmarks/results "$OUT/results"
    timeout 280 python3 -m styleforge bench --e2e --ops --output "$OUT/results" > "$OUT/bench.log" 2>&1
    echo "bench rc=$?"
    timeout 150 python3 -m styleforge bench --e2e --sizes 256,512 --providers eager-fp32,compile,fused-bf16,fused-fp16 \
      --output "$OUT/rerun" > "$OUT/rerun.log" 2>&1
    echo "rerun rc=$?"
    ;;
  2)
    timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests >"$OUT/gpu_tests.log" 2>&1
    grep -E "FAILED|passed|failed" "$OUT/gpu_tests.log" | head -12
    sanitize conv9x9 memcheck 200 --leak-check no python3 dev/kernels/conv9x9/sanitize.py
    ;;
  3)
    sanitize conv9x9 racecheck 200 python3 dev/kernels/conv9x9/sanitize.py --quick
    for tool in memcheck racecheck; do
      sanitize chain $tool 150 python3 dev/kernels/conv3x3/sanitize_alone.py
    done
    ;;
esac
