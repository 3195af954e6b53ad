# shellcheck shell=bash
# What the device scripts in this folder share, sourced by each one from its own folder before it
# changes directory:
#     . "$(dirname "$0")/common.sh"
# Functions and two paths only: it sets no shell option and runs nothing, so each script's `set`
# line alone decides its exit behaviour. The functions read the caller's OUT, START, BUDGET_S and
# LOG where they say so. Not sourced by the helpers other scripts call with bash (join_wheels.sh,
# pack_out.sh) nor by pack_data.sh (the CPU machine's).

# pythonpath_add DIR: DIR first on the exported PYTHONPATH.
pythonpath_add() { export PYTHONPATH="$1${PYTHONPATH:+:$PYTHONPATH}"; }

# start_in_repo: the script's usual start, called before any other cd: the repository root (two
# folders above the script) becomes the working directory, $OUT is made there (when relative),
# and the root goes first on PYTHONPATH.
start_in_repo() {
  cd "$(dirname "$0")/../.."
  mkdir -p "$OUT"
  pythonpath_add "$PWD"
}

# pyav_from_whl: where PyAV does not import and a wheel was carried as .whl/av-*.whl, install it
# into /tmp/site and make that the whole PYTHONPATH (the caller puts the repository before it).
pyav_from_whl() {
  if ! python -c "import av" 2>/dev/null && ls .whl/av-*.whl >/dev/null 2>&1; then
    python -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/av-*.whl && export PYTHONPATH=/tmp/site
  fi
}

# need_pyav: exit 2 unless PyAV imports; its error and the reason go to $OUT/pyav.txt.
need_pyav() {
  python -c "import av" 2> "$OUT/pyav.txt" || { echo "PyAV is not importable: join it first" | tee -a "$OUT/pyav.txt"; exit 2; }
}

# gpu_versions FILE [PYTHON]: the GPU and its driver, then what the PYTHON code prints (versions),
# into FILE, errors included.
gpu_versions() {
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    if [ -n "${2:-}" ]; then python -c "$2"; fi; } > "$1" 2>&1
}

# gpu_header FILE [PYTHON]: gpu_versions, then the commit (git's error where the copy has no .git);
# returns git's status.
gpu_header() {
  gpu_versions "$@"
  git log -1 --format=%H >> "$1" 2>&1
}

# video_start: the temporal scripts' start: $OUT must be set (else the script exits), start_in_repo,
# need_pyav, then gpu_header into $OUT/gpu.txt with torch's and OpenCV's versions and the CPU count.
video_start() {
  OUT=${OUT:?set OUT}
  start_in_repo
  need_pyav
  gpu_header "$OUT/gpu.txt" "import torch, cv2, os; print(torch.__version__, cv2.__version__, os.cpu_count(), 'CPUs')"
}

# gpu_memory: each GPU's name, memory used and total on stdout; never fails.
gpu_memory() { nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true; }

# elapsed: seconds since $START (the caller's `START=$(date +%s)`).
elapsed() { echo $(( $(date +%s) - START )); }

# left: seconds left of $BUDGET_S since $START.
left() { echo $(( BUDGET_S - $(elapsed) )); }

# say WORDS...: the words after the elapsed seconds, on stdout and appended to $LOG.
say() { echo "[$(elapsed) s] $*" | tee -a "$LOG"; }

# sanitize SECONDS TOOL PYTHON SCRIPT: compute-sanitizer's TOOL (memcheck, racecheck) over a kernel
# sanitize script, time-boxed; returns timeout's status. memcheck runs without PyTorch's caching
# allocator (each tensor its own cudaMalloc, so an overrun is seen) and leaves it off, racecheck
# turns it back on and runs the script's --quick sweep.
sanitize() {
  local extra=""
  [ "$2" = racecheck ] && extra="--quick"
  if [ "$2" = memcheck ]; then export PYTORCH_NO_CUDA_MEMORY_CACHING=1; else unset PYTORCH_NO_CUDA_MEMORY_CACHING; fi
  # shellcheck disable=SC2086  # no --quick: no argument
  timeout "$1" compute-sanitizer --tool "$2" --print-limit 20 "$3" "$4" $extra
}

# boxed NAME SECONDS COMMAND...: COMMAND with its output in $OUT/NAME.log (a plain redirect: no pipe
# holds lines back; Python steps run with PYTHONUNBUFFERED=1 and -X faulthandler), sent SIGABRT
# after SECONDS (faulthandler prints every thread's stack), KILL 10 s later; "NAME: rc R after S s
# (box SECONDS s)" appended to $OUT/steps.txt and printed, then the log's last 15 lines without
# progress bars. Never fails.
boxed() {
  local name=$1 secs=$2 t0 rc=0
  shift 2
  t0=$(date +%s)
  timeout -s ABRT -k 10 "$secs" "$@" > "$OUT/$name.log" 2>&1 || rc=$?
  echo "$name: rc $rc after $(( $(date +%s) - t0 )) s (box $secs s)" | tee -a "$OUT/steps.txt"
  grep -v "━" "$OUT/$name.log" | tail -15 || true
}

# The style ratio's VGG and painting for the temporal scripts, carried as .data/temporal/ (from
# shared/data); temporal_data is true when both are there. Set them to reuse what another call
# carried (.data/vgg16_relu4_3.fp16.pth, .data/styles/candy.jpg) when the carry is short.
TEMPORAL_VGG=${TEMPORAL_VGG:-.data/temporal/vgg16_relu4_3.fp16.pth}
TEMPORAL_PAINTING=${TEMPORAL_PAINTING:-.data/temporal/candy.jpg}
temporal_data() { [ -f "$TEMPORAL_VGG" ] && [ -f "$TEMPORAL_PAINTING" ]; }

# bench_temporal SECONDS NAME ARGS...: `styleforge bench --temporal ARGS --output $OUT` time-boxed:
# its rows in $OUT/temporal.jsonl, its tables in $OUT/NAME.md, its log in $OUT/NAME.log; returns
# its status.
bench_temporal() {
  timeout "$1" python -m styleforge bench --temporal "${@:3}" --output "$OUT" > "$OUT/$2.md" 2> "$OUT/$2.log"
}
