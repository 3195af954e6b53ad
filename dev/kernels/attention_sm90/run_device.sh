#!/usr/bin/env bash
# One device call: probe (checks + timings), then, if every check passed, compute-sanitizer
# memcheck and racecheck on the quick cases (only our kernel instrumented). From the repo root:
#   bash dev/kernels/attention_sm90/run_device.sh [capi|ext]
# capi needs build/ from build_capi.sh (carried); ext builds with torch.utils.cpp_extension.load.
# LIB=path: the capi library to test (default build/libsf_attention_sm90.so).
set -u
OUT="${OUT:-out/attention_sm90}"
mkdir -p "$OUT"
impl="${1:-capi}"
here=dev/kernels/attention_sm90
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
set -o pipefail
lib_args=${LIB:+--lib $LIB}
python3 "$here/probe.py" --impl "$impl" $lib_args --out "$OUT" ${PROBE_ARGS:-} 2>&1 | tee "$OUT/probe.log"
rc=$?
echo "probe rc=$rc"
if [ "$rc" = 0 ] && [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck; do
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool "$tool" --kernel-name kns=attention_sm90 \
      --error-exitcode 99 python3 "$here/probe.py" --impl "$impl" $lib_args --quick --out "/tmp/$tool" >"$OUT/$tool.log" 2>&1
    echo "$tool rc=$?"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASS|FAIL|Error" "$OUT/$tool.log" | tail -12
  done
fi
