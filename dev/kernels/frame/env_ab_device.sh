# One device call: `styleforge bench --e2e` (SIZES, default 256,512; fused bf16/fp16, 60 reps) of the
# default build under environments that differ, in the order given (the engine's temporary A/B
# switches), then (TESTS=1) the GPU tests of the fused kernels' modules.
#   bash dev/kernels/frame/env_ab_device.sh LABEL=VAR=VALUE[,VAR=VALUE] ...   (or LABEL= for none)
#   e.g. bash dev/kernels/frame/env_ab_device.sh on=SF_AB_X=1 off=SF_AB_X=0 on2=SF_AB_X=1 off2=SF_AB_X=0
DEVICE_TOPIC=envab
source dev/kernels/device_preamble.sh
for spec in "$@"; do
  label=${spec%%=*} envs=${spec#*=}
  IFS=, read -r -a assigns <<< "$envs"
  timeout 200 env "${assigns[@]}" python3 -m styleforge bench --e2e --sizes "${SIZES:-256,512}" \
    --providers fused-bf16,fused-fp16 --reps 60 --output "$OUT/$label" > "$OUT/$label.log" 2>&1
  echo "$label rc=$? $(grep -hE 'fused-(bf|fp)16: ok' "$OUT/$label.log" | sed -E 's/ ms\/batch.*//' | tr '\n' ';')"
done
if [ "${TESTS:-0}" = 1 ]; then
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_kernels_conv3x3.py tests/test_fused_engine.py \
    tests/test_kernels_norm_sums.py > "$OUT/gpu_tests.log" 2>&1
  grep -E "FAILED|passed|failed" "$OUT/gpu_tests.log" | tail -5
fi
