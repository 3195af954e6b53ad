#!/usr/bin/env bash
# The README's benchmark rows in one device command (H200, torch with CUDA, nvcc), within ~8 min.
#
# Run from the repository root of a copy of a committed tree. Before copying, write the manifest
# that lets the rows prove their commit without .git (it is git-ignored: carry it along):
#     python -m styleforge.bench.env            # writes .styleforge-tree
# then on the device:  bash dev/device/bench_e2e.sh
# Steps: build the kernels; the end-to-end table at 256,512,1080p,4k with every provider
# (compile modes default and reduce-overhead); the pipeline bench; then torch.compile max-autotune,
# largest size first, with whatever time is left (its rows join the same run id). Rows are
# appended to copies of benchmarks/results/*.csv, which go to $OUT with the log and the
# regenerated tables. The lead copies $OUT/*.csv into benchmarks/results/, commits, and runs
# `python -m styleforge.bench.tables` at that clean commit.
# Knobs (environment): BUDGET_S (default 450: seconds from start after which nothing new starts),
# PHASES (default "e2e pipeline autotune"), RUN_ID (share one run id across device calls),
# PIPELINE_CASES (default jpeg-1080p,jpeg-4k,video-1080p,video-4k), PIPELINE_RUNS (default 3).
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder results go to}
BUDGET_S=${BUDGET_S:-450}
PHASES=${PHASES-"e2e pipeline autotune"}
RUN_ID=${RUN_ID:-$(date -u +%Y%m%dT%H%M%S.000000Z)}
PIPELINE_CASES=${PIPELINE_CASES:-jpeg-1080p,jpeg-4k,video-1080p,video-4k}
PIPELINE_RUNS=${PIPELINE_RUNS:-3}
START=$(date +%s)
WORK=$(mktemp -d)
LOG="$OUT/bench.log"
mkdir -p "$OUT" "$WORK/results"
cp benchmarks/results/*.csv "$WORK/results/"      # rows append to copies: the tree stays as committed
pythonpath_add "$PWD"

has() { [[ " $PHASES " == *" $1 "* ]]; }

say "run $RUN_ID; budget ${BUDGET_S}s; phases: $PHASES"
[ -e .git ] || [ -f .styleforge-tree ] || say "WARNING: no .styleforge-tree: rows will record commit unknown, tree state unknown"
python - <<'EOF' 2>&1 | tee -a "$LOG"
import importlib, torch
from styleforge.bench.env import capture_environment
print({k: v for k, v in capture_environment("cuda").items()})
for name in ("rich", "safetensors", "PIL", "av", "numpy"):
    print(name, "ok" if importlib.util.find_spec(name) else "MISSING")
EOF

say "building kernels"
python -m styleforge build 2>&1 | tail -5 | tee -a "$LOG"

if has e2e; then
    say "e2e: every provider, compile modes default,reduce-overhead"
    timeout --signal=INT $(( $(left) > 60 ? $(left) - 60 : 1 )) \
        python -m styleforge bench --e2e --sizes 256,512,1080p,4k --compile-modes default,reduce-overhead \
        --run-id "$RUN_ID" --time-budget $(( $(left) > 150 ? $(left) - 150 : 1 )) \
        --output "$WORK/results" >>"$LOG" 2>&1
    say "e2e exit $?"
fi
if has pipeline && [ "$(left)" -gt 60 ]; then
    say "pipeline: $PIPELINE_CASES, $PIPELINE_RUNS runs each"
    timeout --signal=INT $(( $(left) - 20 )) \
        python -m styleforge bench --pipeline --device cuda --pipeline-cases "$PIPELINE_CASES" \
        --pipeline-runs "$PIPELINE_RUNS" --output "$WORK/results" >>"$LOG" 2>&1
    say "pipeline exit $?"
fi
if has autotune && [ "$(left)" -gt 40 ]; then
    # max-autotune benchmarks conv templates for minutes per size: largest size first, rows kept
    # per size, stopped (the size in flight lost) when the budget runs out.
    say "e2e: torch.compile max-autotune with $(left) s left"
    timeout --signal=INT $(( $(left) - 15 )) \
        python -m styleforge bench --e2e --sizes 4k,1080p,512,256 --compile-modes max-autotune \
        --providers compile-max-autotune-bf16,compile-max-autotune-fp16 --run-id "$RUN_ID" \
        --time-budget $(( $(left) > 60 ? $(left) - 60 : 1 )) --output "$WORK/results" >>"$LOG" 2>&1
    say "max-autotune exit $?"
fi

cp "$WORK/results/e2e.csv" "$OUT/" 2>/dev/null
cp "$WORK/results/pipeline.csv" "$OUT/" 2>/dev/null
python -m styleforge.bench.tables --results "$WORK/results" --print >"$OUT/tables.md" 2>>"$LOG"
grep -E "failed|Error|error:" "$LOG" | grep -v "^\[" | head -20 >"$OUT/failures.txt"
say "done: $(ls "$OUT" | tr '\n' ' ')"
