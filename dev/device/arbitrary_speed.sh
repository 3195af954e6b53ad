#!/usr/bin/env bash
# Issue 39's speed bar on the device: the shipped arbitrary model's whole frame at the default
# stroke scale (two passes, degrid, palette all 0.25: the engine's defaults) at 1080p and 4K,
# ours against eager and torch.compile (plain and SDPA-written) in bf16, each gated against
# eager fp32; then the model alone at native strokes. Bar: ours ≤ 10 ms at 1080p and ≤ 40 ms at
# 4K, not slower than compile-sdpa-bf16. Then each phase of the frame alone, ours against compile
# (phases.txt). Rows: $OUT/arbitrary.csv (copy into benchmarks/results/). About 4–6 minutes on one H200 (compile's warm-up is most of it).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
W=styleforge/styles/arbitrary/arbitrary.safetensors
python -m styleforge build > "$OUT/build.txt" 2>&1
timeout 330 python -m styleforge.bench.arbitrary --weights "$W" --stroke auto --out "$OUT/arbitrary.csv" 2>&1 | tee "$OUT/auto.txt"
timeout 200 python -m styleforge.bench.arbitrary --weights "$W" --stroke native --out "$OUT/arbitrary.csv" 2>&1 | tee "$OUT/native.txt"
# the degrid capture fix: the engine's graph must capture (no "capture failed" warning)
grep -i "capture failed" "$OUT"/auto.txt "$OUT"/native.txt && echo "CAPTURE FAILED somewhere" || echo "no capture failures"
# where the frame's time goes, phase by phase, ours against compile-sdpa (dev/diag/arbitrary_phases.py)
timeout 240 python dev/diag/arbitrary_phases.py --weights "$W" 2>&1 | grep -v Warning | tee "$OUT/phases.txt"
