#!/usr/bin/env bash
# Where a 512-px any-painting CPU call spends its time on the GPU machine's host CPU (issue 43):
# dev/diag/cpu_arbitrary_parts.py, 2 threads pinned to 2 cores, natively (AMX/VNNI) and with
# oneDNN capped to AVX2-VNNI (a laptop). Needs what dev/device/bench_cpu.sh needs (.data/amber.jpg,
# .data/styles/the_scream.jpg; openvino + nncf installed or carried as there); run it after
# bench_cpu.sh on the same warm machine so the OpenVINO cache and /tmp/site43 are there (else the
# first run exports and calibrates: minutes). Writes $OUT/parts_native.log, $OUT/parts_avx2_vnni.log,
# then per node (dev/diag/openvino_arbitrary_nodes.py: each conv's kernel, precision and time, 512 px)
# $OUT/nodes_native.log, $OUT/nodes_avx2_vnni.log and $OUT/nodes_avx2_vnni_jit.log (the convs asked
# for the jit_avx2 kernel instead of the plugin's choice) (~5 min).
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."
: "${OUT:=out/cpu_arbitrary_parts}"
mkdir -p "$OUT"
[ -d /tmp/site43 ] && pythonpath_add /tmp/site43
pythonpath_add "$PWD"
export STYLEFORGE_CACHE_DIR="$PWD/out/cache"
CORES="${CORES:-2,3}"
parts() { taskset -c "$CORES" python dev/diag/cpu_arbitrary_parts.py --threads 2 --reps 3 \
            --photo .data/amber.jpg --painting .data/styles/the_scream.jpg; }
parts 2>&1 | grep -v "Warn" | tee "$OUT/parts_native.log" | tail -16
ONEDNN_MAX_CPU_ISA=AVX2_VNNI parts 2>&1 | grep -v "Warn" | tee "$OUT/parts_avx2_vnni.log" | tail -16
nodes() { taskset -c "$CORES" python dev/diag/openvino_arbitrary_nodes.py --threads 2 --reps 3 --per-node \
            --photo .data/amber.jpg --painting .data/styles/the_scream.jpg "$@"; }
nodes 2>&1 | grep -v "Warn" > "$OUT/nodes_native.log"
ONEDNN_MAX_CPU_ISA=AVX2_VNNI nodes 2>&1 | grep -v "Warn" > "$OUT/nodes_avx2_vnni.log"
ONEDNN_MAX_CPU_ISA=AVX2_VNNI nodes --conv-impl jit_avx2 2>&1 | grep -v "Warn" > "$OUT/nodes_avx2_vnni_jit.log"
grep -h -E "conv kernel asked|node time|executes:|all nodes|INT8, BIN" "$OUT"/nodes_*.log
