#!/usr/bin/env bash
# Builds build/libsf_attention_sm90.so (kernel + capi.cpp, cudart static) with nvcc alone, for
# probe.py --impl capi, and prints registers/spills per kernel (-Xptxas -v).
#   build_capi.sh                 the kernel as it is
#   build_capi.sh NAME 'SED'      a variant: the .cu edited by the sed script, build/lib_NAME.so
# (variants are tuning experiments on a copy; the package file is never edited here).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
csrc="$(cd "$here/../../../styleforge/kernels/csrc" && pwd)"
mkdir -p "$here/build"
src="$csrc/cuda/attention_sm90.cu"
lib="$here/build/libsf_attention_sm90.so"
if [ $# -ge 2 ]; then
  sed -e "$2" "$src" >"$csrc/cuda/.variant_$1.cu"
  trap 'rm -f "$csrc/cuda/.variant_$1.cu"' EXIT
  src="$csrc/cuda/.variant_$1.cu"
  lib="$here/build/lib_$1.so"
fi
nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v \
  -I"$csrc" "$src" "$here/capi.cpp" -o "$lib" 2>&1 |
  grep -E "Used|spill|error|warning" | grep -v "0 bytes spill stores, 0 bytes spill loads" |
  sed -E 's/.*attention_sm90_kernelI//; s/EEEv14CUtensorMap.*//' || true
echo "built $lib"
