#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck over every kernel's sanitize script, at the checkout's
# commit; one log per (script, tool) under $OUT/sanitize, a summary line each. BUDGET_S bounds it.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
OUT=${OUT:?}; BUDGET_S=${BUDGET_S:-400}; START=$(date +%s)
mkdir -p "$OUT/sanitize"
pythonpath_add "$PWD"
scripts="dev/kernels/conv9x9/sanitize.py dev/kernels/instance_norm/sanitize.py dev/kernels/attention/sanitize.py dev/kernels/conv3x3/sanitize_alone.py dev/sanitize_arbitrary_glue.py"
for tool in memcheck racecheck; do
  for s in $scripts; do
    rest=$(left)
    name=$(basename "$(dirname "$s")")_$(basename "$s" .py)_$tool
    if [ "$rest" -lt 20 ]; then echo "$name: NOT RUN (budget)" >> "$OUT/sanitize/summary.txt"; continue; fi
    sanitize "$rest" "$tool" python3 "$s" > "$OUT/sanitize/$name.log" 2>&1
    rc=$?
    echo "$name: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize/$name.log" | tail -1)" >> "$OUT/sanitize/summary.txt"
  done
done
cat "$OUT/sanitize/summary.txt"
