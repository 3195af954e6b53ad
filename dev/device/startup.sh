#!/usr/bin/env bash
# Start-up on the GPU (issue 38): run from the repository root on the device machine; results in $OUT.
#   1. `styleforge build` first, so the kernel build is not what is measured (build.txt says how long).
#   2. `styleforge bench --startup --device cuda --startup-runs $RUNS` (default 5): a one-photo 1080p
#      `stylize --device cuda` in a fresh interpreter, untimed for the bar (kernels, plans cached),
#      then RUNS rounds of import torch + CUDA init in a fresh interpreter (the floor) and a fresh
#      one-photo run, alternating which goes first. The bar compares medians, so one spawn slowed
#      by the host's other work does not decide; every sample is printed and kept in the row.
#      Each run's parts add up to its spawn-to-exit total: interpreter, imports, cli,
#      model_load, codec, decode, stage, stylize, write, other, exit; `details` splits model_load
#      (cuda_init, weights, build_model, runner, kernels), stylize (plan, compute) and the exit
#      (exit_threads, exit_atexit, exit_teardown); `other_where` names where "other" went; `importers`
#      who imported each heavy module first. Bar: median one-photo total <= median floor + 1.5 s.
#      Rows: startup.csv (one row; `floor_samples`, `totals`, `runs`, `median` in its notes).
#   3. The exit alone: `import torch` + CUDA init ending normally vs as `cli.leave` ends (os._exit).
#   4. `python -X importtime` and cProfile of a cached one-photo run, for the slowest imports/calls.
#   5. The real command from the shell (`python -m styleforge stylize`, spawn to exit), RUNS rounds of
#      the floor, the run with STYLEFORGE_CUDA_WARMUP=1 and with =0, order reversed every other round:
#      warmup_ab.txt: the warm-up's effect on the command itself, as a user starts it (step 2's
#      driver enters the CLI the same way, with its timing wrappers).
# StyleForge's bytecode is compiled first (as a pip install leaves it); env.txt has the environment.
# Takes about 5 minutes with the kernel build at RUNS=5 (11 spawns of ~5 s in step 2, 15 in step 5);
# RUNS=9 about 7.
set -u
OUT=${OUT:-/tmp/styleforge-startup}
RUNS=${RUNS:-5}
mkdir -p "$OUT"
{ time python -m styleforge build ; } > "$OUT/build.txt" 2>&1
# A user's pip install leaves bytecode beside the sources; a copied tree (or PYTHONDONTWRITEBYTECODE)
# would otherwise compile StyleForge's modules in every measured run.
python -m compileall -q styleforge > /dev/null
{ env | grep -E '^(PYTHON|CUDA_|OMP_|TORCH_)' ; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv; } \
    > "$OUT/env.txt" 2>&1
python -m styleforge bench --startup --device cuda --startup-runs "$RUNS" --output "$OUT" 2>&1 \
    | tee "$OUT/startup.txt"
python - <<'PY' | tee "$OUT/floor_exit.txt"
import subprocess, sys, time
body = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
endings = {"ordinary exit": "", "as cli.leave": "; import atexit, os; atexit._run_exitfuncs(); os._exit(0)"}
for _ in range(3):
    for name, ending in endings.items():
        start = time.time()
        subprocess.run([sys.executable, "-c", body + ending], check=True)
        print(f"import torch + CUDA init, {name}: {time.time() - start:.2f} s")
PY
python - "$OUT" <<'PY'
import sys
from PIL import Image
Image.new("RGB", (1920, 1080), (120, 90, 60)).save(f"{sys.argv[1]}/photo.jpg")
PY
ARGS=("$OUT/photo.jpg" -o "$OUT/photo_out.jpg" --device cuda --overwrite)
python -m styleforge stylize "${ARGS[@]}" > /dev/null 2>&1    # the first run: plans cached
python -X importtime -m styleforge stylize "${ARGS[@]}" 2> "$OUT/importtime.txt" > /dev/null
sort -t'|' -k2 -n "$OUT/importtime.txt" | tail -40 > "$OUT/importtime_top.txt"
grep -E "torch\._dynamo|fsdp|_inductor|sympy|cpp_extension|setuptools|rich|torchvision|triton" "$OUT/importtime.txt" \
    | sort -t'|' -k2 -n | tail -15 > "$OUT/importtime_heavy.txt"
python -m cProfile -o "$OUT/stylize.prof" -m styleforge stylize "${ARGS[@]}" > /dev/null 2>&1
python -c "import pstats, sys; pstats.Stats(sys.argv[1]).sort_stats('cumulative').print_stats(60)" \
    "$OUT/stylize.prof" > "$OUT/stylize_profile.txt"
python - "$OUT" "$RUNS" <<'PY' | tee "$OUT/warmup_ab.txt"
import os, statistics, subprocess, sys, time
out, runs = sys.argv[1], int(sys.argv[2])
floor = ["-c", "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize(); "
               "import atexit, os; atexit._run_exitfuncs(); os._exit(0)"]
command = ["-m", "styleforge", "stylize", f"{out}/photo.jpg", "-o", f"{out}/photo_ab.jpg", "--device", "cuda",
           "--overwrite"]
cases = [("floor", floor, "1"), ("warmup on", command, "1"), ("warmup off", command, "0")]
times = {name: [] for name, _, _ in cases}
for i in range(runs):
    for name, args, flag in (cases if i % 2 == 0 else cases[::-1]):
        env = {**os.environ, "STYLEFORGE_CUDA_WARMUP": flag}
        start = time.time()
        subprocess.run([sys.executable, *args], check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times[name].append(time.time() - start)
for name, samples in times.items():
    print(f"{name}: median {statistics.median(samples):.2f} s; samples " + " ".join(f"{t:.2f}" for t in samples))
print(f"bar on the real command (floor + 1.5 s): {statistics.median(times['floor']) + 1.5:.2f} s")
PY
echo "done: $OUT"
