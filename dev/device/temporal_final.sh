#!/usr/bin/env bash
# Issue 40's closing rows in one short call (about 3.5 minutes on one H200): the GPU blend's tests
# and its blurs' timings,
# `bench --temporal` on the five 1080p clips with candy (the bars), then the stability row: the
# v1 starry_night (no stability term; runs/v1/starry_night.safetensors, from commit ab92e61)
# against the shipped one (trained with --stability-weight), pan and rotation, quality only.
# Needs PyAV on PYTHONPATH and, carried: .data/temporal/{vgg16_relu4_3.fp16.pth,candy.jpg},
# .data/styles/starry_night.jpg, runs/v1/starry_night.safetensors. Rows: $OUT/temporal.jsonl.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
status=0
VGG=.data/temporal/vgg16_relu4_3.fp16.pth
timeout 60 python -m pytest -q -m "gpu and not slow" tests/media/test_temporal_torch.py tests/media/test_flow_torch.py \
  tests/media/test_band_blur.py > "$OUT/gpu_tests.txt" 2>&1 || status=1
tail -1 "$OUT/gpu_tests.txt"
# The blend's blurs (band_blur's GEMMs against the convolutions they replaced), 1080p only.
timeout 25 python dev/temporal/blur_bench.py --device cuda --sizes 1080 --repeat 50 > "$OUT/blur_bench.md" 2>&1 || status=1
cat "$OUT/blur_bench.md"
timeout 200 python -m styleforge bench --temporal --style candy --device cuda --vgg-weights $VGG \
  --painting .data/temporal/candy.jpg --output "$OUT" > "$OUT/bench_candy.md" 2> "$OUT/bench_candy.log" || status=1
cat "$OUT/bench_candy.md"
timeout 120 python -m styleforge bench --temporal --style runs/v1/starry_night.safetensors \
  --stability-checkpoint styleforge/styles/starry_night.safetensors --painting .data/styles/starry_night.jpg \
  --vgg-weights $VGG --temporal-scenes pan,rotation --temporal-speed-frames 0 --device cuda --output "$OUT" \
  > "$OUT/bench_stability.md" 2> "$OUT/bench_stability.log" || status=1
cat "$OUT/bench_stability.md"; tail -3 "$OUT/bench_stability.log"
exit $status
