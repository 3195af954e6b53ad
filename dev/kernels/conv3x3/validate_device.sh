#!/usr/bin/env bash
# One device call: the whole GPU test suite, the conv3x3 layer/frame probe and the 512² profile,
# then compute-sanitizer memcheck and racecheck on each conv3x3 configuration separately.
#   OUT=... bash dev/kernels/conv3x3/validate_device.sh
DEVICE_TOPIC=conv3x3
source dev/kernels/device_preamble.sh
timeout 300 python3 -m pytest -q ${TESTS:-tests} -m gpu -p no:cacheprovider 2>&1 | tail -8 | tee "$OUT/gpu_tests.log"
timeout 150 python3 dev/kernels/conv3x3/bench_layer.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 | grep frame | tee "$OUT/frames.log"
timeout 60 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 2>&1 | tail -2
for cfg in res128 dec128to64 dec64to32; do
  if [ "$cfg" = res128 ]; then sel="test_cuda_conv3x3_norm_matches_float64 and odd and bfloat16 and affine_residual"
  else sel="decoder_conv3x3_norm_matches_float64 and odd and bfloat16 and affine_residual and $cfg"; fi
  for tool in memcheck racecheck; do
    sanitize "$cfg" "$tool" 90 --kernel-name kns=conv3x3_kernel \
      python3 -m pytest -q -x tests/test_kernels_conv3x3.py -p no:cacheprovider -k "$sel"
  done
done
