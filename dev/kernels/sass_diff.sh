#!/usr/bin/env bash
# SASS safety net for refactoring the CUDA sources without a GPU: compile .cu files with the
# flags build.py and torch's JIT build use, dump the SASS one file per kernel, and diff two dumps.
# It checks that a source change leaves the machine code alone; it is not a test of correctness.
#   dev/kernels/sass_diff.sh dump OUTDIR [FILE.cu ...]   # default: every .cu under csrc
#   dev/kernels/sass_diff.sh diff OLDDIR NEWDIR          # per-kernel: identical / differs
# ARCHS (default "90a") picks the targets; NVCC, CUOBJDUMP name the tools; DEFS adds -D flags.
# No cuobjdump in the toolkit? `pip install --target DIR nvidia-cuda-cuobjdump` has one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CSRC=$ROOT/styleforge/kernels/csrc
NVCC=${NVCC:-/usr/local/bin/nvcc}
CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
ARCHS=${ARCHS:-90a}

# Kernels in an anonymous namespace carry a hash of their file's path in the mangled name
# (_GLOBAL__N__<hash>_<len>_<file>_cu_<hash>): dropped from names and text so a moved file compares.
normalize() {
  local f g
  for f in "$1"/*.sass; do
    sed -i -E 's/_GLOBAL__N__[0-9a-f]{8}_[0-9]+_[A-Za-z0-9_]+_cu_[0-9a-f]{8}/_GLOBAL__N_/g' "$f"
    g=$(basename "$f" | sed -E 's/_GLOBAL__N__[0-9a-f]{8}_[0-9]+_[A-Za-z0-9_]+_cu_[0-9a-f]{8}/_GLOBAL__N_/g')
    [ "$f" = "$1/$g" ] || mv "$f" "$1/$g"
  done
}

dump() {
  local out=$1; shift
  mkdir -p "$out"
  local files=("$@")
  [ ${#files[@]} -gt 0 ] || mapfile -t files < <(cd "$CSRC" && find . -name '*.cu' | sed 's|^\./||' | sort)
  local inc
  inc=$(python3 -c "import torch.utils.cpp_extension as c; print(' '.join('-I'+p for p in c.include_paths()))")
  for arch in $ARCHS; do
    for f in "${files[@]}"; do
      f=${f#"$CSRC"/}
      local stem; stem=$(basename "$f" .cu)   # the file's name, so that a moved file still compares
      local dir=$out/sm_$arch/$stem
      rm -rf "$dir"; mkdir -p "$dir"
      # Flags as build.py (CUDA_FLAGS, arch_flags) plus torch's COMMON_NVCC_FLAGS and -std.
      "$NVCC" -cubin -O3 -lineinfo -std=c++20 --expt-relaxed-constexpr \
        -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ \
        -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ ${DEFS:-} $inc \
        -gencode=arch=compute_$arch,code=sm_$arch -o "$dir.cubin" "$CSRC/$f"
      # One file per kernel; addresses and encodings dropped so that only instructions compare.
      "$CUOBJDUMP" -sass "$dir.cubin" | awk -v d="$dir" '
        /Function :/ { name = $3; file = d "/" name ".sass"; next }
        file && /^ +\/\*[0-9a-f]+\*\/ / {
          sub(/^ +\/\*[0-9a-f]+\*\/ +/, ""); sub(/ *\/\* 0x[0-9a-f]+ \*\/ *$/, "")
          sub(/ *;$/, ";"); print > file }'
      rm -f "$dir.cubin"
      normalize "$dir"
      echo "$f sm_$arch: $(ls "$dir" | wc -l) kernels"
    done
  done
}

diffdirs() {
  local old=$1 new=$2 status=0
  while IFS= read -r k; do
    if [ ! -f "$new/$k" ]; then echo "MISSING  $k"; status=1
    elif cmp -s "$old/$k" "$new/$k"; then echo "same     $k"
    else
      # Register renaming alone is reported apart from real instruction changes.
      if cmp -s <(sed -E 's/\bU?R[0-9]+\b/R/g; s/\bP[0-9]\b/P/g' "$old/$k") \
                <(sed -E 's/\bU?R[0-9]+\b/R/g; s/\bP[0-9]\b/P/g' "$new/$k"); then
        echo "regs     $k"
      else
        echo "DIFFERS  $k ($(diff "$old/$k" "$new/$k" | grep -c '^[<>]') lines)"
      fi
      status=1
    fi
  done < <(cd "$old" && find . -name '*.sass' | sed 's|^\./||' | sort)
  (cd "$new" && find . -name '*.sass' | sed 's|^\./||' | sort) | while IFS= read -r k; do
    [ -f "$old/$k" ] || echo "NEW      $k"
  done
  return $status
}

case ${1:-} in
  dump) shift; dump "$@" ;;
  normalize) shift; for d in "$@"; do normalize "$d"; done ;;
  diff) diffdirs "$2" "$3" ;;
  *) sed -n '2,7p' "$0"; exit 2 ;;
esac
