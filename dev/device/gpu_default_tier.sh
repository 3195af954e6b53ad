#!/usr/bin/env bash
# The GPU tests of the default tier under tests/slow_limit.py's 5 s rule, on the device machine.
# A failure that says "cost N s, over the default tier's 5 s" names a GPU test to mark slow.
# The kernels are built first (`styleforge build`) so that no test's call pays for the compile.
# Results: $OUT/gpu_default_tier.log (the summary lists the tests over 2.5 s and the tier's total).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp}
python -m styleforge build > "$OUT/build.log" 2>&1
python -m pytest -q -m "gpu and not slow" -p no:cacheprovider --durations=25 tests > "$OUT/gpu_default_tier.log" 2>&1
echo "pytest exit $?" >> "$OUT/gpu_default_tier.log"
tail -60 "$OUT/gpu_default_tier.log"
