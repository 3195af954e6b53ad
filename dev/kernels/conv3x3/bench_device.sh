#!/usr/bin/env bash
# One device call: conv3x3 + engine GPU tests, memcheck of the statistics-free path, then the
# bench suite (end to end and per op) into a copy of benchmarks/results under $OUT.
set -u
OUT="${OUT:-out/bench}"
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 STYLEFORGE_CACHE_DIR=/tmp/sfcache
timeout 120 python3 -m pytest -q tests/test_kernels_conv3x3.py tests/test_fused_engine.py -m gpu -p no:cacheprovider 2>&1 | tail -2
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer --tool memcheck --kernel-name kns=conv3x3_kernel --error-exitcode 99 \
  python3 -m pytest -q tests/test_kernels_conv3x3.py -p no:cacheprovider -k "without_statistics" 2>&1 | grep -E "ERROR SUMMARY|passed|failed"
cp -r benchmarks/results "$OUT/results"
timeout 420 python3 -m styleforge bench --e2e --ops --output "$OUT/results" 2>&1 | tail -60 > "$OUT/bench.log"
tail -45 "$OUT/bench.log"
(cd "$OUT/results" && rm -rf experiments training.csv && ls)
