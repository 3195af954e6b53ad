#!/usr/bin/env bash
# Train a plan's recipe variants at once (dev/train_plan.py), score each on issue 44's yardstick
# on this GPU, and pack $OUT into at most 8 files.
#
#   bash dev/device/train_plan.sh PLAN.json [DEADLINE_S (default 480)] [RESERVE_S (default 130)]
#
# carry: .data/content .data/styles .data/vgg16_relu4_3.fp16.pth .data/tools .data/amber.jpg
# (dev/device/pack_data.sh fills them; .data/tools/style_metrics.py is shared/tools' copy).
# One process per variant, round-robin over the visible GPUs; each starts from its plan's warm file
# (or from scratch), checkpoints into runs/<plan>/runs/<variant>/ (a warm machine's next call
# continues them) and stops DEADLINE_S after the start less RESERVE_S, then exports and scores its
# int8 file: the files the CLI writes on CUDA for the asset photos and amber.jpg, each at its own
# size, PNG and JPEG 4:4:4 ("metric" in train_log.json, per format), and the older fp32 512-px
# preview ("metric_fp32_512"). The kernels the CLI's fused backend needs are built while the
# variants train. Results, before packing: styles_1.tar, styles_2.tar (int8 variants, named after
# them), logs.tar.gz (train_log.json, logs, samples), curves.png, sheet.jpg, build.txt; after
# dev/device/pack_out.sh: out.tgz.part-* (cat them | tar xz).
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
PLAN=${1:?usage: train_plan.sh PLAN.json [DEADLINE_S] [RESERVE_S]}
DEADLINE=${2:-480}
RESERVE=${3:-130}
OUT=${OUT:-out/device}
NAME=$(basename "$PLAN" .json)
mkdir -p "$OUT" "runs/$NAME"
# style_metrics.py loads ../data/vgg16_relu4_3.fp16.pth beside its folder: point .data/data at the VGG.
mkdir -p .data/data && ln -sfn ../vgg16_relu4_3.fp16.pth .data/data/vgg16_relu4_3.fp16.pth
( time python -m styleforge build ) > "$OUT/build.txt" 2>&1 &
BUILD=$!
COUNT=$(python -c "import json, sys; print(len(json.load(open(sys.argv[1]))['variants']))" "$PLAN")
gpu_memory
python dev/train_builtin.py --plan "$PLAN" --concurrent "$COUNT" --deadline "$DEADLINE" --reserve "$RESERVE" \
    --out-dir "runs/$NAME" --pack-dir "$OUT" --metrics .data/tools/style_metrics.py --photo .data/amber.jpg \
    ${EXTRA_ARGS:-}
RC=$?
wait "$BUILD"
python - "runs/$NAME/train_log.json" <<'PY' || true
import json, sys
for r in json.load(open(sys.argv[1])):
    m = r.get("metric", {})
    cells = "  ".join(f"{f} ratio {v['style_ratio']:.3f} content {v['content_dist']:.2f} grid {v['grid_score']:.1f} "
                      f"palette {v['palette_dist']:.1f}" for f, v in m.items()) or r.get("metric_error", "no metric")
    print(f"{r.get('name', r['style']):22s} {r['steps']:6d} steps  {cells}")
PY
bash dev/device/pack_out.sh "$OUT"
exit $RC
