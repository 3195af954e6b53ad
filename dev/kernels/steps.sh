# Shared by the dev/kernels/*/run_device.sh scripts (sourced, not run): from the repo root, with
# logs under $OUT (default: $OUT_DEFAULT), each step's exit code kept in RC so every step runs
# even after a failure, and the machine's versions written to $OUT/env.txt first.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT="${OUT:-$OUT_DEFAULT}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python3}"
declare -A RC

step() {   # step NAME LOGFILE TAIL_LINES COMMAND...
  local name="$1" log="$2" lines="$3"; shift 3
  echo "=== $name: $*"
  local start=$SECONDS
  "$@" >"$OUT/$log" 2>&1
  RC[$name]=$?
  tail -n "$lines" "$OUT/$log"
  echo "=== $name: exit ${RC[$name]} in $((SECONDS - start)) s (full log: $OUT/$log)"
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
  command -v nvcc >/dev/null && nvcc --version | tail -1; } 2>&1 | tee "$OUT/env.txt"
