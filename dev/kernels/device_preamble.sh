# Sourced by the dev/kernels/*/..._device.sh scripts (one device call each): the output folder
# ($OUT, default out/$DEVICE_TOPIC), the environment every step needs, the GPU and driver, and the
# kernel build (first use compiles; printing the result shows a build failure at the top).
set -u
OUT="${OUT:-out/${DEVICE_TOPIC:-kernels}}"
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 STYLEFORGE_CACHE_DIR=/tmp/sfcache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "from styleforge import kernels; print(kernels.cuda_kernels_available())" 2>&1 | tail -3
