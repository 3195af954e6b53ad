#!/usr/bin/env bash
# Issue 39's speed bar on the device, in one call: expected about 7 minutes on one H200 (build 1,
# bar 2–3, A/B 1–1.5, native 1.5, phases what is left), never more than BUDGET_S (default 540 s:
# a 10-minute call keeps a minute for the machine's start and the transfers). Nothing here has
# been timed on a device yet: steps.log records each step's real duration for the next plan.
#
# Steps in order of importance; each gets at most its own cap and what is left of the budget,
# so a slow step cuts the ones after it, never the bar:
#   1. build the kernels (about 1 minute cold)                                   cap 150 s
#   2. THE BAR: the whole frame at the default stroke scale (two passes, degrid, palette all
#      0.25: the engine's defaults), 1080p and 4K: eager-fp32 (the gate's reference),
#      compile-sdpa-bf16 and ours-bf16. Bar: ours ≤ 10 ms at 1080p, ≤ 40 ms at 4K, and not
#      slower than compile-sdpa-bf16 in the same run                       (auto.txt) cap 240 s
#   3. A/B, when BASE names a commit this copy's git holds (default 89a9572, the last rows'):
#      ours-bf16 (gated against eager-fp32) from BASE's tree (git archive) and from this one,
#      1080p, the whole frame and the model alone, one process each (ab.txt; rows in
#      ab_base.csv, ab_here.csv). Here's ms below base's is the change's gain   cap 150 s
#   4. the model alone at native size: 1080p eager-fp32, compile-sdpa-bf16, ours-bf16; 4K
#      eager-fp32 and ours-bf16 only (compile-sdpa failed the 40 dB gate at 4K)  (native.txt)
#                                                                                cap 150 s
#   5. phases (dev/diag/arbitrary_phases.py): ours' column first (seconds), then compile-sdpa's
#      phase by phase as each compiles (phases.txt; lines kept whatever the cut)  cap 150 s
# Rows: $OUT/arbitrary.csv (steps 2 and 4: append them to benchmarks/results/arbitrary.csv),
# $OUT/ab_*.csv (step 3: not for the results file). steps.log: each step's start and exit code
# (124: cut by its cap or the budget).
set -uo pipefail
. "$(dirname "$0")/common.sh"
OUT=${OUT:?set OUT}
BUDGET_S=${BUDGET_S:-540}
BASE=${BASE:-89a9572}
start_in_repo
W=$PWD/styleforge/styles/arbitrary/arbitrary.safetensors
START=$(date +%s)
LOG="$OUT/steps.log"

# step NAME CAP CMD...: run CMD under min(CAP, budget left − 5 s); skipped when under 20 s are left.
step() {
  local name=$1 cap=$2; shift 2
  local room=$(( $(left) - 5 ))
  local limit=$(( cap < room ? cap : room ))
  if (( limit < 20 )); then say "$name: skipped (budget spent)"; return; fi
  say "$name: start (limit ${limit} s)"
  timeout "$limit" "$@"
  local rc=$?
  say "$name: exit $rc"
}
# the bench, unfiltered (the capture check below reads its warnings); run from tree $1's root
bench() { local tree=$1; shift; ( cd "$tree" && PYTHONPATH=$tree python -m styleforge.bench.arbitrary --weights "$W" "$@" 2>&1 ); }
export -f bench; export W OUT

step build 150 bash -c 'python -m styleforge build > "$OUT/build.txt" 2>&1'
step bar 240 bash -c 'bench "$PWD" --stroke auto --providers eager-fp32 compile-sdpa-bf16 ours-bf16 \
  --out "$OUT/arbitrary.csv"' | tee "$OUT/auto.txt"

# The device's copy has no .git: carry BASE's package, unpacked here beforehand without weights
# (`mkdir -p out/ab_base && git archive 89a9572 styleforge ':(exclude)*.safetensors' | tar -x -C out/ab_base`,
# carry out/ab_base); the weights come from this tree ($W).
if [ -d out/ab_base/styleforge ]; then
  BASE_TREE=$PWD/out/ab_base; export BASE_TREE
elif git cat-file -e "$BASE^{commit}" 2>/dev/null; then
  BASE_TREE=$(mktemp -d); export BASE_TREE; trap 'rm -rf "$BASE_TREE"' EXIT
  git archive "$BASE" | tar -x -C "$BASE_TREE"
fi
if [ -n "${BASE_TREE:-}" ]; then
  # One process per side and case; the base tree has no .git, so its rows' commit is empty:
  # the file (ab_base.csv, ab_here.csv) says which side a row is.
  step ab 150 bash -c 'for side in base here; do
      tree=$([ $side = base ] && echo "$BASE_TREE" || echo "$PWD")
      for stroke in auto native; do
        bench "$tree" --sizes 1080p --stroke $stroke --providers eager-fp32 ours-bf16 --out "$OUT/ab_$side.csv" \
          | sed "s/^/$side $stroke: /"
      done
    done' | tee "$OUT/ab.txt"
else
  echo "A/B skipped: no out/ab_base and commit $BASE is not in this copy's git" | tee -a "$LOG"
fi

step native 150 bash -c 'bench "$PWD" --stroke native --sizes 1080p --providers eager-fp32 compile-sdpa-bf16 ours-bf16 \
    --out "$OUT/arbitrary.csv"
  bench "$PWD" --stroke native --sizes 4k --providers eager-fp32 ours-bf16 --out "$OUT/arbitrary.csv"' \
  | tee "$OUT/native.txt"
# the engine's graph must capture (no "capture failed" warning)
grep -il "capture failed" "$OUT"/auto.txt "$OUT"/native.txt "$OUT"/ab.txt 2>/dev/null \
  && echo "CAPTURE FAILED somewhere" || echo "no capture failures"
step phases 150 bash -c 'python dev/diag/arbitrary_phases.py --weights "$W" 2>&1 | grep -v Warning' | tee "$OUT/phases.txt"
say "done"
