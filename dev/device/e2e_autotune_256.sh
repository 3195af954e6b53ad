#!/usr/bin/env bash
# The one size with no torch.compile max-autotune row: 256. One run id at 256 with the rows that
# `table:e2e-best-compile` pairs (max-autotune bf16/fp16 beside fused bf16/fp16, eager fp32 for
# reference), so its ratio is of one run. About 3 minutes on one H200 (max-autotune tunes for
# about a minute per precision).
# Run from a copy of a committed tree with its manifest (`python -m styleforge.bench.env` writes
# .styleforge-tree before copying; carry it). Rows: $OUT/e2e.csv (a copy of the committed file
# with this run appended: check that its first lines equal benchmarks/results/e2e.csv, then
# commit it) and $OUT/tables.md (every table from those rows); log: $OUT/bench.log.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder results go to}
WORK=$(mktemp -d)
mkdir -p "$OUT" "$WORK/results"
cp benchmarks/results/e2e.csv "$WORK/results/"     # rows append to a copy: the tree stays as committed
pythonpath_add "$PWD"
[ -e .git ] || [ -f .styleforge-tree ] || echo "WARNING: no .styleforge-tree: rows will record commit unknown"
python -m styleforge build 2>&1 | tail -3 | tee "$OUT/bench.log"
timeout --signal=INT 420 python -m styleforge bench --e2e --sizes 256 --compile-modes max-autotune \
    --providers eager-fp32,fused-bf16,fused-fp16,compile-max-autotune-bf16,compile-max-autotune-fp16 \
    --output "$WORK/results" >>"$OUT/bench.log" 2>&1
echo "bench exit $?" | tee -a "$OUT/bench.log"
cp "$WORK/results/e2e.csv" "$OUT/"
python -m styleforge.bench.tables --results "$WORK/results" --print >"$OUT/tables.md" 2>>"$OUT/bench.log"
grep -E "^256 " "$OUT/bench.log" | tee "$OUT/summary.txt"
