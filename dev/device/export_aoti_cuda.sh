#!/usr/bin/env bash
# Issue 41 (export): compile the candy style as a CUDA AOTInductor package, check it against the
# CPU engine (the command's own PSNR check) and time it at 1080p. Results in $OUT/export_aoti_cuda.txt.
# Look for: two "PSNR vs styleforge … ok" lines (≥ 45 dB; TF32 convolutions may make it < 128 dB)
# and the ms per 1080p frame. Expect a few minutes of compile time.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/export_out}
mkdir -p "$OUT"
LOG="$OUT/export_aoti_cuda.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$LOG"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$LOG"
( time python -m styleforge export candy --format aoti --device cuda -o /tmp/candy_cuda.pt2 ) 2>&1 | tee -a "$LOG"
python - <<'PY' 2>&1 | tee -a "$LOG"
import time, torch
model = torch._inductor.aoti_load_package("/tmp/candy_cuda.pt2")
for shape in [(1, 3, 1080, 1920), (4, 3, 720, 1280)]:
    x = torch.rand(*shape, device="cuda") * 255
    for _ in range(3):
        model(x)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        model(x)
    torch.cuda.synchronize()
    print(f"AOTI CUDA package, fp32, {shape}: {(time.perf_counter() - t) / 20 * 1e3:.2f} ms per call")
PY
