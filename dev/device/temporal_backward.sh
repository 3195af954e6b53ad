#!/usr/bin/env bash
# Issue 40: can the blend's backward flow alone (`--no-temporal-flow-check`, half the decode
# workers' DIS) become the default? At c573fb1 it reached >= 0.7x plain frames/s on every 1080p
# clip but put the rotation's style change at +13.9 % (bar: within 10 %). The blend now weighs
# the carried frame by TemporalSettings.unchecked_trust (8/9: alpha 0.8 at the default 0.9) when
# only the backward flow stands behind the trust mask. One call, about 5 minutes on one H200
# (the bench took under 3 at c573fb1; the sweep stylizes 5 clips x 16 frames once; not yet run).
# Needs PyAV importable (the lead joins it) and, carried for the style ratio:
# .data/temporal/{vgg16_relu4_3.fp16.pth,candy.jpg}. Results under $OUT:
#   bench_backward.md / temporal.jsonl
#       `bench --temporal --no-temporal-flow-check` on the five clips at 1080p: warping error,
#       style change and x plain per clip. Expected from the CPU blend lab (device warping
#       errors have run 0.03-0.04 above the CPU's): rotation's style change under +10 %, the
#       cut's warping error the closest to its bar. The default flips (TEMPORAL_FLOW_CHECK
#       False) only if every clip keeps warp <= 0.6x, style within 10 % and speed >= 0.7x; then
#       commit these rows as benchmarks/results/temporal.jsonl's temporal rows.
#   sweep_trust.txt
#       the device's trade for the knob: the shipped torch blender with the backward flow alone
#       at unchecked_trust 1 (as at c573fb1), 0.94, 8/9, 0.85 on the five clips (1080p, 16
#       frames, CUDA stylization), warping error x per-frame / style change per clip. If the
#       bench misses a bar, pick the value that keeps every clip inside both from this table.
set -uo pipefail
. "$(dirname "$0")/common.sh"
video_start
status=0

# 1. The bench's rows with the backward flow alone (and the shipped unchecked_trust).
bench_temporal 240 bench_backward --no-temporal-flow-check --style candy --device cuda \
  --vgg-weights "$TEMPORAL_VGG" --painting "$TEMPORAL_PAINTING" || status=1
cat "$OUT/bench_backward.md"; tail -3 "$OUT/bench_backward.log"

# 2. unchecked_trust swept on the device's own stylization and blender (fast flows at 640 px).
timeout 200 python dev/temporal/sweep.py --size 1920 --frames 16 --device cuda --cache "" \
  --vgg-weights "$TEMPORAL_VGG" --painting "$TEMPORAL_PAINTING" \
  ship=1,torch=1,check=0,preset=fast,a=0.9,s=0.7,vr=0.5,ut=1 \
  ship=1,torch=1,check=0,preset=fast,a=0.9,s=0.7,vr=0.5,ut=0.94 \
  ship=1,torch=1,check=0,preset=fast,a=0.9,s=0.7,vr=0.5,ut=0.8889 \
  ship=1,torch=1,check=0,preset=fast,a=0.9,s=0.7,vr=0.5,ut=0.85 \
  ship=1,torch=1,preset=fast,a=0.9,s=0.7,vr=0.5 \
  > "$OUT/sweep_trust.txt" 2> "$OUT/sweep_trust.log" || status=1
cat "$OUT/sweep_trust.txt"
exit $status
