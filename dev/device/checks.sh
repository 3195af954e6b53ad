#!/usr/bin/env bash
# One GPU's share of a device call: the GPU tests, the start-up bench, the instance_norm sanitizer
# and, with the time left, the pipeline bench. Run from the repository root with OUT set; PyAV
# from a carried .whl/ if the machine lacks it. BUDGET_S bounds the whole (default 540).
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
OUT=${OUT:?}; BUDGET_S=${BUDGET_S:-540}; START=$(date +%s)
mkdir -p "$OUT"
pyav_from_whl
pythonpath_add "$PWD"
python -m styleforge build > "$OUT/build.txt" 2>&1
timeout $(( $(left) > 300 ? 260 : $(left) / 2 )) python -m pytest -q -m gpu -p no:cacheprovider --durations=15 -rfE \
  > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc=$?" >> "$OUT/gpu_tests.txt"
timeout $(( $(left) > 150 ? 120 : 60 )) python -m styleforge bench --startup --device cuda --output "$OUT" > "$OUT/startup.txt" 2>&1
for tool in memcheck racecheck; do
  [ "$(left)" -gt 40 ] || break
  sanitize $(( $(left) - 20 )) "$tool" python dev/kernels/instance_norm/sanitize.py > "$OUT/sanitize_instance_norm_$tool.txt" 2>&1
  echo "rc=$?" >> "$OUT/sanitize_instance_norm_$tool.txt"
done
unset PYTORCH_NO_CUDA_MEMORY_CACHING
if [ "$(left)" -gt 70 ]; then
  timeout $(( $(left) - 10 )) python -m styleforge bench --pipeline --device cuda --pipeline-cases jpeg-1080p,video-1080p \
    --pipeline-runs 3 --output "$OUT" > "$OUT/pipeline.txt" 2>&1
fi
echo "checks done at $(elapsed) s"
