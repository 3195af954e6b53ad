#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck over every kernel's sanitize script, at the checkout's
# commit; one log per (script, tool) under $OUT/sanitize, a summary line each. BUDGET_S bounds it.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?}; BUDGET_S=${BUDGET_S:-400}; START=$(date +%s)
mkdir -p "$OUT/sanitize"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
scripts="dev/kernels/conv9x9/sanitize.py dev/kernels/instance_norm/sanitize.py dev/kernels/attention/sanitize.py dev/kernels/conv3x3/sanitize_alone.py dev/sanitize_arbitrary_glue.py"
for tool in memcheck racecheck; do
  for s in $scripts; do
    left=$(( BUDGET_S - ($(date +%s) - START) ))
    name=$(basename "$(dirname "$s")")_$(basename "$s" .py)_$tool
    if [ "$left" -lt 20 ]; then echo "$name: NOT RUN (budget)" >> "$OUT/sanitize/summary.txt"; continue; fi
    extra=""; [ "$tool" = racecheck ] && extra="--quick"
    env=""; [ "$tool" = memcheck ] && export PYTORCH_NO_CUDA_MEMORY_CACHING=1 || unset PYTORCH_NO_CUDA_MEMORY_CACHING
    timeout "$left" compute-sanitizer --tool "$tool" --print-limit 20 python3 "$s" $extra > "$OUT/sanitize/$name.log" 2>&1
    rc=$?
    echo "$name: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize/$name.log" | tail -1)" >> "$OUT/sanitize/summary.txt"
  done
done
cat "$OUT/sanitize/summary.txt"
