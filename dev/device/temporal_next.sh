#!/usr/bin/env bash
# Issue 40's speed gap: does the blend's backward flow alone (VideoOptions.temporal_flow_check off,
# `--no-temporal-flow-check`: half the decode workers' DIS) bring 1080p --temporal to >= 0.7x plain
# frames/s on every clip while keeping the quality bars? One call, under 5 minutes on one H200
# (estimated from temporal_final.sh's and temporal_flow.sh's steps, not yet run).
# Needs PyAV importable (the lead joins it, as for every video step) and, carried for the style
# ratio: .data/temporal/{vgg16_relu4_3.fp16.pth,candy.jpg}. Results under $OUT:
#   attribute.md   the 1080p pan through stylize_video: plain, temporal (shipped: both flows) and
#                  backward-only; read frames/s, CPU ms a frame and DIS ms (expected: about half of
#                  temporal's DIS ms, frames/s between temporal's and no-dis's 132 of the last run)
#   bench_backward.md / temporal.jsonl
#                  `bench --temporal --no-temporal-flow-check` on the five clips: warping error,
#                  style change and x plain per clip. Compare with the committed a61871d rows
#                  (both flows): pan 0.536, zoom 0.558, subject 0.489, rotation 0.561, cut 0.597.
#                  It becomes the default only if every clip keeps warp <= 0.6x, style within 10 %
#                  and reaches speed >= 0.7x; then commit the rows and flip TEMPORAL_FLOW_CHECK.
set -uo pipefail
. "$(dirname "$0")/common.sh"
video_start
status=0

# 1. Where the time goes, shipped flows against the backward flow alone (1080p pan, 90 frames, best of 2).
timeout 90 python dev/temporal/attribute_speed.py --size 1920 --frames 90 --repeats 2 \
  --modes plain,temporal,backward-only > "$OUT/attribute.md" 2>&1 || status=1
cat "$OUT/attribute.md"

# 2. The bench's rows with the backward flow alone: quality and speed per clip, in temporal.jsonl.
bench_temporal 190 bench_backward --no-temporal-flow-check --style candy --device cuda \
  --vgg-weights "$TEMPORAL_VGG" --painting "$TEMPORAL_PAINTING" || status=1
cat "$OUT/bench_backward.md"; tail -3 "$OUT/bench_backward.log"
exit $status
