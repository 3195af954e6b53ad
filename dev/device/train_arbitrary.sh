#!/usr/bin/env bash
# Issue 39 on the device: fine-tune the arbitrary-style model from the shipped weights with the
# grid penalty and the colour loss, resumable across calls, and score it with all four measures.
#   stage                 copy the carried data parts (.data/arbitrary/part_*) to runs/arbitrary-data/,
#                         where they stay while the machine is warm (carry one ~20 MB part per call)
#   sweep LIMIT_S         one variant per GPU (up to 4), each resumed from its last checkpoint
#                         (or the shipped weights), stopped to leave room for the eval within LIMIT_S
#   train NAME LIMIT_S    one variant on every GPU (torchrun DDP), resumed, then scored
#   eval NAME...          score variants only (degrid on/off, palette none/between)
# Results under $OUT: eval tables and rows (arbitrary_quality.csv), contact sheets, training
# curves (curve_NAME.csv), sample sheets, and each variant's int8 weights (NAME.safetensors: carry
# it back as runs/arbitrary/NAME/init.safetensors to go on after the machine went cold).
# CPU check with tiny sizes: DEVICE=cpu TINY=1 OUT=/tmp/o bash dev/device/train_arbitrary.sh sweep 60
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
OUT=${OUT:-out/device-arbitrary}
DATA=runs/arbitrary-data
RUNS=runs/arbitrary
DEVICE=${DEVICE:-cuda}
SHIPPED=styleforge/styles/arbitrary/arbitrary.safetensors
EVAL_RESERVE=${EVAL_RESERVE:-180}      # seconds kept for scoring and packing after training
mkdir -p "$OUT" "$RUNS"
pythonpath_add "$PWD"

# name → flags on top of COMMON. Fine-tunes of the shipped model (style 20, local 6), whose
# outputs carry a 4-px lattice (grid score ~300) and a washed palette (SW distance ~17).
declare -A VARIANTS=(
  [grid]="--grid-weight 20"
  [grid_col3]="--grid-weight 20 --colour-weight 3"
  [grid_col10]="--grid-weight 20 --colour-weight 10"
  [grid_col3_hue]="--grid-weight 20 --colour-weight 3 --hue-jitter 0.5"
)
ORDER=(grid_col3 grid_col10 grid grid_col3_hue)
COMMON="--style-weight 20 --local-weight 6 --lr 5e-5 --warmup 200 --steps 12000 --batch-size 8
        --checkpoint-every 500 --sample-every 1000 --log-every 100 --keep-checkpoints 1 --no-progress"
if [[ -n "${TINY:-}" ]]; then    # a CPU smoke run: a few steps on tiny crops
  COMMON="--style-weight 20 --local-weight 6 --steps 3 --batch-size 1 --image-size 64 --content-size 72
          --max-content 8 --warmup 1 --checkpoint-every 2 --sample-every 0 --log-every 1 --no-progress"
fi

# GPUS=N with CUDA_VISIBLE_DEVICES leaves the other GPUs to other work (a bench beside training)
gpus() { [[ -n ${GPUS:-} ]] && echo "$GPUS" && return; [[ $DEVICE == cpu ]] && echo 1 || nvidia-smi -L | wc -l; }

stage() {
  mkdir -p "$DATA"
  for part in .data/arbitrary/part_*; do
    [[ -d $part ]] && cp -r "$part"/. "$DATA"/ && echo "staged $part"
  done
  du -sh "$DATA"/* 2>/dev/null
}

need_data() {
  for f in "$DATA/vgg16_relu5_1.fp16.pth" "$DATA/content" "$DATA/styles" "$DATA/eval/photos"; do
    [[ -e $f ]] || { echo "missing $f: carry .data/arbitrary/part_vgg and part_images, run 'stage'"; exit 2; }
  done
}

train_one() {  # name seconds [torchrun nproc]; prints the training log to runs/.../train.log
  local name=$1 seconds=$2 nproc=${3:-0} run=$RUNS/$1 init=$SHIPPED
  mkdir -p "$run"
  [[ -f $run/init.safetensors ]] && init=$run/init.safetensors
  local args=(train-arbitrary --vgg-weights "$DATA/vgg16_relu5_1.fp16.pth" --content-dir "$DATA/content"
              --style-dir "$DATA/styles" --run-dir "$run" --resume auto --init-weights "$init"
              --max-seconds "$seconds" --device "$DEVICE" ${COMMON} ${VARIANTS[$name]})
  if (( nproc > 1 )); then
    torchrun --standalone --nproc-per-node "$nproc" -m styleforge "${args[@]}" >> "$run/train.log" 2>&1
  else
    python -m styleforge "${args[@]}" >> "$run/train.log" 2>&1
  fi
}

evaluate() {  # name gpu
  local name=$1 gpu=$2 w=$RUNS/$1/arbitrary.safetensors prec=bf16
  [[ $DEVICE == cpu ]] && prec=fp32
  local photos=("$DATA/eval/photos") paintings=("$DATA/eval/paintings_held_out")
  local settings=("--degrid --palette none" "--no-degrid --palette none" "--degrid --palette between")
  if [[ -n "${TINY:-}" ]]; then   # the CPU smoke run: one pair, one setting
    photos=("$DATA/eval/photos/amber.jpg"); paintings=("$DATA/eval/paintings_held_out/candy.jpg")
    settings=("--degrid --palette none")
  fi
  for setting in "${settings[@]}"; do
    local tag=${setting// /}; tag=${tag//--/_}
    CUDA_VISIBLE_DEVICES=$gpu python -m styleforge eval-arbitrary --weights "$w" --photos "${photos[@]}" \
      --paintings "${paintings[@]}" --metric-vgg "$DATA/vgg16_relu5_1.fp16.pth" \
      --device "$DEVICE" --precision $prec $setting --csv "$OUT/arbitrary_quality.csv" \
      --label "$name step=$(steps_of "$name") ${setting}" --sheet "$OUT/sheet_${name}${tag}.png" \
      > "$OUT/eval_${name}${tag}.txt" 2>&1
  done
  [[ -n "${TINY:-}" ]] && return
  # the held-out SOURCE (a whole package family never trained on), default setting only
  CUDA_VISIBLE_DEVICES=$gpu python -m styleforge eval-arbitrary --weights "$w" --photos "${photos[@]}" \
    --paintings "$DATA/eval/paintings_held_out_source" --metric-vgg "$DATA/vgg16_relu5_1.fp16.pth" \
    --device "$DEVICE" --precision $prec --csv "$OUT/arbitrary_quality_source.csv" \
    --label "$name step=$(steps_of "$name") held-out source" > "$OUT/eval_${name}_source.txt" 2>&1
}

steps_of() { python -c "from styleforge.models.arbitrary.weights import read_metadata as r; print(r('$RUNS/$1/arbitrary.safetensors').get('steps'))" 2>/dev/null; }

pack() {  # name: curve rows, samples, int8 weights for the trip home
  local name=$1 run=$RUNS/$1
  python - "$run" "$OUT/curve_${name}.csv" "$OUT/${name}.safetensors" <<'EOF'
import csv, sys
from pathlib import Path
import torch
from styleforge.models.arbitrary import load_arbitrary, save_arbitrary
run, curve, weights = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
ckpt = sorted(run.glob("step_*.pt"))[-1]
history = torch.load(ckpt, map_location="cpu", weights_only=True)["history"]
keys = list(dict.fromkeys(k for row in history for k in row))
with open(curve, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=keys)
    w.writeheader()
    w.writerows(history)
model, meta = load_arbitrary(run / "arbitrary.safetensors")
meta.pop("format", None), meta.pop("config", None)
save_arbitrary(weights, model, meta, int8=True)
print(f"{run.name}: {ckpt.name}, {len(history)} curve rows; last {history[-1] if history else None}")
EOF
  mkdir -p "$OUT/samples_${name}"
  cp "$(ls "$run"/samples/*.png 2>/dev/null | tail -1)" "$OUT/samples_${name}/" 2>/dev/null
  tail -2 "$run/train.log" > "$OUT/train_tail_${name}.txt"
  # The int8 file's error against the weights it was made from, on held-out pairs (fp32 compute):
  # the repository ships only int8, so this is measured where the full weights still exist.
  python - "$run/arbitrary.safetensors" "$OUT/${name}.safetensors" "$DATA/eval" "$DEVICE" \
    > "$OUT/int8_error_${name}.txt" 2>&1 <<'PY'
import math, sys
from pathlib import Path
from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.options import StylizeOptions
from styleforge.training.arbitrary_eval import load_scaled
full, int8, data, device = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
engines = [ArbitraryStylizer(StylizeOptions(arbitrary_weights=w, device=device, precision="fp32")) for w in (full, int8)]
for photo in sorted((data / "photos").iterdir())[:3]:
    for painting in sorted((data / "paintings_held_out").iterdir()):
        x = load_scaled(photo)
        a, b = (e.stylize(x, [(painting, 1.0)]).round().clamp(0, 255).float() for e in engines)
        mse = float((a - b).square().mean())
        print(f"{photo.name} {painting.name} PSNR int8 vs full {10 * math.log10(255 ** 2 / max(mse, 1e-12)):.1f} dB "
              f"max {float((a - b).abs().max()):.0f}")
PY
}

summary() {
  for f in "$OUT"/eval_*.txt; do
    echo "== $f"; grep -E "median over|bars" "$f"
  done | tee "$OUT/summary.txt"
}

cmd=${1:-}; shift || true
START=$(date +%s)
case $cmd in
  stage) stage ;;
  sweep)
    limit=${1:?sweep LIMIT_S}; need_data
    n=$(gpus); (( n > ${#ORDER[@]} )) && n=${#ORDER[@]}
    secs=$(( limit - EVAL_RESERVE - $(elapsed) ))
    pids=()
    for i in $(seq 0 $((n - 1))); do
      CUDA_VISIBLE_DEVICES=$i train_one "${ORDER[$i]}" "$secs" & pids+=($!)
    done
    wait "${pids[@]}"
    pids=()
    for i in $(seq 0 $((n - 1))); do evaluate "${ORDER[$i]}" "$i" & pids+=($!); done
    wait "${pids[@]}"
    for i in $(seq 0 $((n - 1))); do pack "${ORDER[$i]}"; done
    summary ;;
  train)
    name=${1:?train NAME LIMIT_S}; limit=${2:?train NAME LIMIT_S}; need_data
    secs=$(( limit - EVAL_RESERVE - $(elapsed) ))
    train_one "$name" "$secs" "$(gpus)"
    evaluate "$name" "${CUDA_VISIBLE_DEVICES:-0}"; pack "$name"; summary ;;
  eval)
    need_data; i=0
    for name in "$@"; do evaluate "$name" $((i % $(gpus))) & i=$((i + 1)); done
    wait; summary ;;
  *) echo "usage: $0 stage | sweep LIMIT_S | train NAME LIMIT_S | eval NAME..."; exit 2 ;;
esac
echo "done in $(elapsed) s"
