#!/usr/bin/env bash
# Issue 40's closing rows in one short call (about 3.5 minutes on one H200): the GPU blend's tests
# and its blurs' timings,
# `bench --temporal` on the five 1080p clips with candy (the bars), then the stability row: the
# v1 starry_night (no stability term; runs/v1/starry_night.safetensors, from commit ab92e61)
# against the shipped one (trained with --stability-weight), pan and rotation, quality only.
# Needs PyAV on PYTHONPATH and, carried: .data/temporal/{vgg16_relu4_3.fp16.pth,candy.jpg},
# .data/styles/starry_night.jpg, runs/v1/starry_night.safetensors. Rows: $OUT/temporal.jsonl.
set -uo pipefail
. "$(dirname "$0")/common.sh"
OUT=${OUT:?set OUT}
start_in_repo
status=0
timeout 60 python -m pytest -q -m "gpu and not slow" tests/media/test_temporal_torch.py tests/media/test_flow_torch.py \
  tests/media/test_band_blur.py > "$OUT/gpu_tests.txt" 2>&1 || status=1
tail -1 "$OUT/gpu_tests.txt"
# The blend's blurs (band_blur's GEMMs against the convolutions they replaced), 1080p only.
timeout 25 python dev/temporal/blur_bench.py --device cuda --sizes 1080 --repeat 50 > "$OUT/blur_bench.md" 2>&1 || status=1
cat "$OUT/blur_bench.md"
bench_temporal 200 bench_candy --style candy --device cuda --vgg-weights "$TEMPORAL_VGG" \
  --painting "$TEMPORAL_PAINTING" || status=1
cat "$OUT/bench_candy.md"
bench_temporal 120 bench_stability --style runs/v1/starry_night.safetensors \
  --stability-checkpoint styleforge/styles/starry_night.safetensors --painting .data/styles/starry_night.jpg \
  --vgg-weights "$TEMPORAL_VGG" --temporal-scenes pan,rotation --temporal-speed-frames 0 --device cuda || status=1
cat "$OUT/bench_stability.md"; tail -3 "$OUT/bench_stability.log"
exit $status
