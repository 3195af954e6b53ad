# One device call: `styleforge bench --e2e` (SIZES, default 256,512; fused bf16/fp16, 60 reps) of builds that
# differ by compile-time switches, or of the default build under environments that differ (the
# engine's temporary A/B switches), in the order given, then (PHASES=1) the 512² frame tile by tile
# (frame_phases.py) on the default build, and (TESTS=1) the GPU tests of the fused kernels' modules.
#   bash dev/kernels/frame/ab_device.sh LABEL=FLAGS ...     (FLAGS: nvcc -D flags joined by commas,
#                                                           or "" for the default build, or
#                                                           env:VAR=VALUE[,VAR=VALUE] for an environment)
#   e.g. SIZES=1080p,4k bash dev/kernels/frame/ab_device.sh on= off=-DSF_NO_CACHE_HINTS=1 on2= off2=-DSF_NO_CACHE_HINTS=1
#        bash dev/kernels/frame/ab_device.sh on=env:SF_AB_X=1 off=env:SF_AB_X=0 on2=env:SF_AB_X=1 off2=env:SF_AB_X=0
DEVICE_TOPIC=ab
source dev/kernels/device_preamble.sh
for spec in "$@"; do
  label=${spec%%=*} flags=${spec#*=}
  cmd=(python3 -m styleforge)
  if [ "${flags#env:}" != "$flags" ]; then
    IFS=, read -r -a assigns <<< "${flags#env:}"
    cmd=(env "${assigns[@]}" python3 -m styleforge)
  elif [ -n "$flags" ]; then
    cmd=(python3 dev/kernels/frame/with_flags.py "${flags//,/ }" -m styleforge)
  fi
  timeout 200 "${cmd[@]}" bench --e2e --sizes "${SIZES:-256,512}" --providers fused-bf16,fused-fp16 --reps 60 \
    --output "$OUT/$label" > "$OUT/$label.log" 2>&1
  echo "$label rc=$? $(grep -hE 'fused-(bf|fp)16: ok' "$OUT/$label.log" | sed -E 's/ ms\/batch.*//' | tr '\n' ';')"
done
if [ "${PHASES:-0}" = 1 ]; then
  timeout 200 python3 dev/kernels/frame/frame_phases.py --out "$OUT" --size 512 > "$OUT/phases.log" 2>&1
  echo "phases rc=$?"; grep -vE "^   " "$OUT/phases.log" | cut -c1-330 | head -7; grep -E "^   \{" "$OUT/phases.log" | head -9
fi
if [ "${TESTS:-0}" = 1 ]; then
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv3x3.py tests/test_fused_engine.py \
    tests/test_kernels_norm_sums.py > "$OUT/gpu_tests.log" 2>&1
  grep -E "FAILED|passed|failed" "$OUT/gpu_tests.log" | tail -5
fi
