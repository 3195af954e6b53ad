#!/usr/bin/env bash
# Distil the slim (half-width) network of each built-in style from its shipped full network, on
# the GPU machine, and score both on the held-out photos (the package's assets).
#
# Data (copied by the lead into the ignored .data/ folder and carried with the call):
#   .data/content/*.jpg                 training photos (shared/data/content)
#   .data/styles/*.jpg                  the paintings (shared/data/styles; names as in training/catalogue.py)
#   .data/vgg16_relu4_3.fp16.pth        the VGG16 loss network (shared/data)
# Run from the repository root: bash dev/device/distill_slim.sh   (carry: [".data"])
# SLIM_INIT=teacher (default) starts each slim network from its teacher's channels
# (training/slim_init.py); SLIM_INIT=random from PyTorch's init, as the 2026-11-28 run did.
# Budget: ~8 min on one H200: STYLES (default all nine) × SECONDS (default 40) of training, plus
# ~10 s per style of loading and scoring. Results under $OUT: styles_K.tar (the slim weights:
# unpack into styleforge/styles/slim/), logs.tar.gz (train_log.json with per style "heldout"
# and "teacher_heldout": the style-loss ratio of slim and full on the same photos; sample sheets).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:=out/distill_slim}"
STYLES="${STYLES:-candy,mosaic,udnie,rain_princess,starry_night,great_wave,the_scream,composition_vii,shipwreck}"
SECONDS_PER_STYLE="${SECONDS_PER_STYLE:-40}"
DISTILL_WEIGHT="${DISTILL_WEIGHT:-1e8}"
SLIM_INIT="${SLIM_INIT:-teacher}"   # teacher: the teacher's channels, refit (training/slim_init.py); random
for need in .data/content .data/styles .data/vgg16_relu4_3.fp16.pth; do
  [ -e "$need" ] || { echo "missing $need (copy it from shared/data)" >&2; exit 2; }
done
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python -m pip install -q -e . >/dev/null 2>&1 || true
python dev/train_builtin.py --model slim --teacher-dir styleforge/styles --distill-weight "$DISTILL_WEIGHT" \
  --slim-init "$SLIM_INIT" \
  --styles "$STYLES" --steps 100000 --max-seconds-per-style "$SECONDS_PER_STYLE" --batch-size 8 \
  --vgg-weights .data/vgg16_relu4_3.fp16.pth --content-dir .data/content --paintings-dir .data/styles \
  --out-dir out/distill_slim --pack-dir "$OUT" 2>&1 | tee out/distill_slim.log | tail -40
python - <<'PY'
import json
rows = json.load(open("out/distill_slim/train_log.json"))
print(f"{'style':16} {'steps':>6} {'img/s':>7} {'slim ratio':>10} {'full ratio':>10} {'slim/full':>9}")
for r in rows:
    s, t = r.get("heldout", {}).get("ratio"), r.get("teacher_heldout", {}).get("ratio")
    print(f"{r['style']:16} {r['steps']:6d} {r['images_per_s']:7.0f} {s or 0:10.3f} {t or 0:10.3f} "
          f"{(s / t if s and t else 0):9.2f}")
PY
