#!/usr/bin/env bash
# Train the built-in styles (v2 recipe) on the GPU machine, resuming across calls.
#
#   bash dev/device/train_styles.sh [DEADLINE_S (default 480)] [STYLES (default: all 14)]
#
# Needs .data/ (dev/device/pack_data.sh; carry=[".data"]). Trains every style at once: one process
# per style, spread round-robin over the GPUs (several per GPU: the network is small). Checkpoints
# (with Adam state, 20 MB a style) stay in runs/builtin/ (git-ignored), which the device keeps
# between calls while the machine is warm: the next call continues each style from its newest
# step_*.pt, exactly; a style at its step count is not trained again. On a fresh machine, unpack the
# returned styles_*.tar into runs/warm/ and carry=[".data", "runs/warm"]: each style then warm-starts
# from those int8 weights at their step count (fresh Adam).
# Every worker stops DEADLINE_S seconds after the start, less 45 s to export. Results in $OUT:
# styles_1.tar, styles_2.tar (int8 weights, int8 PSNR in each file's metadata), logs.tar.gz
# (train_log.json with loss histories and held-out ratios; per-style sample sheets), curves.png,
# sheet.jpg (every style on the asset photos).
# EXTRA_ARGS passes more dev/train_builtin.py flags, e.g. issue 44's yardstick per style in
# train_log.json ("metric"): carry a folder laid out as runs/metrics/tools/style_metrics.py +
# runs/metrics/data/vgg16_relu4_3.fp16.pth (the module reads ../data/ beside its own folder) and
#   EXTRA_ARGS="--metrics runs/metrics/tools/style_metrics.py --reserve 200" bash dev/device/train_styles.sh
# (after each export it writes the CLI's files on the GPU and scores them on the CPU, so keep more
# --reserve; add --photo .data/amber.jpg for issue 44's fourth photo: docs/training.md). The frobenius
# style loss, in its own run folder (a later --out-dir wins over the one below; a checkpoint of the other
# reduction is refused on resume), style weights ×0.2 ≈ 1/R (docs/training.md):
#   EXTRA_ARGS="--style-reduction frobenius --style-weight-scale 0.2 --out-dir runs/frobenius"
# Several recipes per style in one call: dev/device/train_plan.sh with a plan (dev/device/plans/).
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
DEADLINE=${1:-480}
OUT=${OUT:-out/device}
mkdir -p "$OUT" runs/builtin
STYLES=${2:-$(python -c "from styleforge.training.catalogue import BUILTIN_STYLES as S; print(','.join(s.name for s in S))")}
WARM=$([ -d runs/warm ] && echo 1 || true)
COUNT=$(echo "$STYLES" | tr ',' '\n' | wc -l)
gpu_memory
python dev/train_builtin.py --styles "$STYLES" --concurrent "$COUNT" --deadline "$DEADLINE" \
    --out-dir runs/builtin --pack-dir "$OUT" ${WARM:+--warm-dir runs/warm} ${EXTRA_ARGS:-}
ls -la "$OUT"
