#!/usr/bin/env bash
# The aimed palette share (models/arbitrary/palette_share.py) on a GPU, in one call of about
# 6 minutes on one H200 (not yet run on a device):
#   1. build the kernels, then the GPU tests of the transport and the rule: the rule captured in
#      a CUDA graph equals it eager; the fused engine's graph with the rule (gpu.txt)
#   2. its cost: issue 39's speed bar with the rule, and ours at BASE (before the rule) against
#      here, by dev/device/arbitrary_speed.sh with its A/B step (BASE=7f93657; carry out/ab_base
#      made by `mkdir -p out/ab_base && git archive 7f93657 styleforge ':(exclude)*.safetensors'
#      | tar -x -C out/ab_base`). Look at ab.txt: here's ms minus base's is the rule's cost per
#      frame (two 256-px measures and one sort of 32 directions a frame).
set -uo pipefail
. "$(dirname "$0")/common.sh"
OUT=${OUT:?set OUT}
start_in_repo
python -m styleforge build > "$OUT/build.txt" 2>&1
timeout 150 python -m pytest -q -m gpu tests/models/test_arbitrary_palette_share.py \
  tests/models/test_arbitrary_palette.py tests/engine/test_arbitrary_fused.py 2>&1 | tail -15 | tee "$OUT/gpu.txt"
BASE=${BASE:-7f93657} BUDGET_S=${BUDGET_S:-360} bash dev/device/arbitrary_speed.sh
