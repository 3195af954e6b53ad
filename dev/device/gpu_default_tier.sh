#!/usr/bin/env bash
# The GPU tests of the default tier under tests/slow_limit.py's 5 s rule, on the device machine,
# then the capture and GPU-codec tests (the capture stress test is `slow`, so named here).
# A failure that says "cost N s, over the default tier's 5 s" names a GPU test to mark slow.
# The kernels are built first (`styleforge build`) so that no test's call pays for the compile.
# Results under $OUT: build.log; gpu_default_tier.log (the summary lists the tests over 2.5 s and
# the tier's total; the large-plane kernel tests should be well under it); capture_codecs.log
# (the codec tests' failure messages carry the measured grey levels and JPEG tables).
# Run from anywhere; the tier took 4 minutes on an H200 before its large-plane tests were made
# fast, the rest about 20 s; the timeouts keep it under 8 minutes after the build.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp}
mkdir -p "$OUT"
status=0
python -m styleforge build > "$OUT/build.log" 2>&1 || status=1
timeout 330 python -m pytest -q -m "gpu and not slow" -p no:cacheprovider --durations=25 tests \
  > "$OUT/gpu_default_tier.log" 2>&1
rc=$?
echo "pytest exit $rc" >> "$OUT/gpu_default_tier.log"
[ "$rc" -eq 0 ] || status=1
timeout 90 python -m pytest -q -m gpu -rs -p no:cacheprovider --durations=10 \
  tests/engine/test_capture.py tests/media/test_media_gpu_codecs.py \
  > "$OUT/capture_codecs.log" 2>&1 || status=1
tail -45 "$OUT/gpu_default_tier.log"
tail -15 "$OUT/capture_codecs.log"
exit $status
