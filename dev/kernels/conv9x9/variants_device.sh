# Session 11, one device call: sm90_variants.cu (the wgmma rate at N = 32/64/128 and conv1's parts
# switched off, other store and weight forms, per-phase times).
#   bash dev/kernels/conv9x9/variants_device.sh   (writes under $OUT)
set -u
OUT="${OUT:-out/variants}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -std=c++17 -O3 -arch=sm_90a -lineinfo -I styleforge/kernels/csrc/cuda dev/kernels/conv9x9/sm90_variants.cu \
  -o "$OUT/v" 2>&1 | grep -E "error" | head
timeout 120 "$OUT/v" | tee "$OUT/variants.txt"
rm -f "$OUT/v"
