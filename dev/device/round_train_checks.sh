#!/usr/bin/env bash
# One x2 device call: the built-in styles train on GPU 1 while GPU 0 runs the checks that need
# no second GPU (kernel build, start-up bench, compute-sanitizer). Results in $OUT:
# styles_*.tar, logs.tar.gz, curves.png, sheet.jpg (dev/device/train_styles.sh) and checks.tar.gz.
#
#   bash dev/device/round_train_checks.sh [DEADLINE_S (default 560)]
#
# Warm start: every *.safetensors in runs/warm_carry/ (and, with WARM_FROM_PACKAGE=1, the
# package's styles, when a session has overwritten them in its copy with newer weights) is copied
# into runs/warm/; a style with a checkpoint in runs/builtin/ (a warm machine) resumes that
# instead. Carry .data/content, .data/styles, .data/vgg16_relu4_3.fp16.pth (dev/device/pack_data.sh).
# EXTRA_ARGS reaches dev/train_builtin.py after this script's --reserve 100 (a later flag wins),
# e.g. issue 44's metric per style, with runs/metrics/{tools/style_metrics.py,data/vgg16_relu4_3.fp16.pth}
# carried: EXTRA_ARGS="--metrics runs/metrics/tools/style_metrics.py --reserve 200" (see train_styles.sh).
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
DEADLINE=${1:-560}
OUT=${OUT:?}
START=$(date +%s)
W=$(mktemp -d)
mkdir -p runs/warm
[ "${WARM_FROM_PACKAGE:-0}" = 1 ] && cp styleforge/styles/*.safetensors runs/warm/
ls runs/warm_carry/*.safetensors >/dev/null 2>&1 && cp runs/warm_carry/*.safetensors runs/warm/
pythonpath_add "$PWD"
# --reserve 100: 14 workers exporting at once, then the parent's packing, took ~90 s on an x2
# host (2026-11-28); the default 45 s let the call's 600-s limit cut the packing off.
CUDA_VISIBLE_DEVICES=${TRAIN_GPU:-1} OUT=$OUT EXTRA_ARGS="--reserve 100 ${EXTRA_ARGS:-}" bash dev/device/train_styles.sh "$DEADLINE" > "$W/train.log" 2>&1 &
TRAIN=$!
checks_left() { echo $(( DEADLINE - 25 - $(elapsed) )); }   # the checks end 25 s before the deadline
export CUDA_VISIBLE_DEVICES=${CHECK_GPU:-0}
timeout 200 env OUT="$W/startup" bash dev/device/startup.sh > "$W/startup.log" 2>&1
echo "startup done at $(elapsed) s" >> "$W/round.log"
[ "$(checks_left)" -gt 60 ] && OUT="$W" BUDGET_S=$(checks_left) bash dev/device/sanitize_all.sh > "$W/sanitize.log" 2>&1
echo "sanitize done at $(elapsed) s" >> "$W/round.log"
wait $TRAIN
echo "training rc=$? at $(elapsed) s" >> "$W/round.log"
tar -czf "$OUT/checks.tar.gz" -C "$W" . 2>/dev/null
ls -la "$OUT"
