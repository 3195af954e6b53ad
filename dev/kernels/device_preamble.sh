# Sourced by the dev/kernels/*/..._device.sh scripts (one device call each): the output folder
# ($OUT, default out/$DEVICE_TOPIC), the environment every step needs, the GPU and driver, and the
# kernel build (first use compiles; printing the result shows a build failure at the top).
set -u
OUT="${OUT:-out/${DEVICE_TOPIC:-kernels}}"
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 STYLEFORGE_CACHE_DIR=/tmp/sfcache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "from styleforge import kernels; print(kernels.cuda_kernels_available())" 2>&1 | tail -3

# compute-sanitizer on one command, without PyTorch's caching allocator (every tensor its own
# allocation, so overruns show): the log in $OUT/<tool>_<name>.log, one summary line printed.
#   sanitize NAME TOOL SECONDS [SANITIZER OPTIONS] COMMAND...
sanitize() {
  local name=$1 tool=$2 seconds=$3
  shift 3
  local log="$OUT/${tool}_${name}.log"
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$seconds" compute-sanitizer --tool "$tool" --error-exitcode 99 "$@" >"$log" 2>&1
  local rc=$?   # the sanitizer's verdict first: the programs' own lines may be many
  echo "$name $tool rc=$rc $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|Internal' "$log" | tr '\n' ' ')" \
    "$(grep -hE 'rel err|calls|mismatch|passed|failed' "$log" | tr '\n' ' ' | cut -c1-300)"
}
