#!/usr/bin/env bash
# Start-up on the GPU (issue 38): run from the repository root on the device machine; results in $OUT.
#   1. `styleforge build` first, so the kernel build is not what is measured (its own line says how long).
#   2. `styleforge bench --startup --device cuda`: import torch + CUDA init in a fresh interpreter,
#      then a one-photo 1080p `stylize --device cuda` twice in fresh interpreters, with the parts of
#      each run, the heavy modules each imported and who imported torch._dynamo first.
#      The bar: the second run's total <= (import torch + CUDA init) + 1.5 s. Row: $OUT/startup.csv.
#   3. `python -X importtime` of the second kind of run, for the slowest imports.
# Takes about 1-2 minutes once the kernels are built.
set -u
OUT=${OUT:-/tmp/styleforge-startup}
mkdir -p "$OUT"
{ time python -m styleforge build ; } > "$OUT/build.txt" 2>&1
python -m styleforge bench --startup --device cuda --output "$OUT" 2>&1 | tee "$OUT/startup.txt"
python - "$OUT" <<'PY'
import sys
from PIL import Image
Image.new("RGB", (1920, 1080), (120, 90, 60)).save(f"{sys.argv[1]}/photo.jpg")
PY
python -X importtime -m styleforge stylize "$OUT/photo.jpg" -o "$OUT/photo_out.jpg" --device cuda --overwrite \
    2> "$OUT/importtime.txt" > /dev/null
sort -t'|' -k2 -n "$OUT/importtime.txt" | tail -40 > "$OUT/importtime_top.txt"
grep -E "torch\._dynamo|fsdp|_inductor|sympy|cpp_extension|setuptools|rich" "$OUT/importtime.txt" \
    | sort -t'|' -k2 -n | tail -15 > "$OUT/importtime_heavy.txt"
echo "done: $OUT"
