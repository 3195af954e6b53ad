#!/usr/bin/env bash
# Issue 40: does `media.band_blur` (the blend's blurs as batched GEMMs, the feather as 2×2 pools)
# make the torch blend cheaper on the GPU, and is its frame the convolutions' frame? One short
# call on one H200 (about 2 minutes; nothing else carried). Results under $OUT (default
# out/device-blend-speed), packed by pack_out.sh (cat out.tgz.part-* | tar xz):
#   gpu.txt            the GPU, driver, torch and commit
#   gpu_tests.txt      the GPU tests of test_band_blur.py (GEMM blur vs the float64 convolution,
#                      1080p and 4K planes included; the pools bit for bit) and
#                      test_temporal_torch.py (torch vs OpenCV blend, no host sync in the engine
#                      stage, its frames equal the blender's): all must pass
#   blur_bench.md      ms per call of each blur the blend runs, at its own shapes at 1080p and 4K:
#                      the convolution it replaced, the GEMM at blocks 32/64/128 (64 ships), the
#                      feather's pools; each with its gap to the float64 convolution
#   blend_profile.txt  one steady-state blend, shipped ("new") against the convolutions ("conv",
#                      dev/temporal/versions/blend_conv.py = the c8d59da blurs) at 1080p and 4K:
#                      kernels, ms of GPU time, the costliest kernels, ms per blend (20 back to
#                      back) and |frame − new| (expected max ≤ 1 level, mean ~0)
set -uo pipefail
. "$(dirname "$0")/common.sh"
OUT=${OUT:-out/device-blend-speed}
start_in_repo
status=0
gpu_header "$OUT/gpu.txt" "import torch; print(torch.__version__, torch.cuda.get_device_name())" \
  || echo "no git here" >> "$OUT/gpu.txt"

timeout 90 python -m pytest -q -m "gpu and not slow" -rs --durations=5 \
  tests/media/test_band_blur.py tests/media/test_temporal_torch.py > "$OUT/gpu_tests.txt" 2>&1 || status=1
tail -3 "$OUT/gpu_tests.txt"
timeout 30 python dev/temporal/blur_bench.py --device cuda --sizes 1080,2160 --repeat 50 \
  > "$OUT/blur_bench.md" 2>&1 || status=1
cat "$OUT/blur_bench.md"
timeout 50 python dev/temporal/profile_blend.py --device cuda --sizes 1080,2160 --versions new,conv --repeat 20 \
  > "$OUT/blend_profile.txt" 2>&1 || status=1
grep -v "^ *issued" "$OUT/blend_profile.txt" | grep -iv warn
bash dev/device/pack_out.sh "$OUT"
exit $status
