#!/usr/bin/env bash
# Issue 40 on the device: which flow setting makes 1080p --temporal reach 0.7x plain frames/s and
# still keeps the quality bars, in one call. Results under $OUT (default out/device-temporal-flow),
# packed at the end. Run from the repository root on one H200; about 5-6 minutes (estimated from
# temporal.sh's steps, not yet run). For the style ratio, carry .data/temporal/{vgg16_relu4_3.fp16.pth,candy.jpg}.
# What each step answers (docs/temporal.md: "Speed through the video path", "Tried and rejected"):
#   1 gpu_tests.txt   flow_torch's CUDA flows equal its CPU flows, with no host sync
#   2 flow_cost.md    CPU and wall ms per DIS pair (fast/ultrafast, 640/480/384, OpenCV's pool vs
#                     one thread) and the GPU flow's ms, with end-point errors, on this host's CPU
#   3 attribute.md    frames/s through stylize_video for plain, shipped and each flow option
#   4 sweep_flow.txt  warping error x per-frame / style change per clip for each flow option at 1080p
set -uo pipefail
. "$(dirname "$0")/common.sh"
OUT=${OUT:-out/device-temporal-flow}
start_in_repo
status=0
gpu_header "$OUT/gpu.txt" \
  "import torch, cv2, os; print(torch.__version__, cv2.__version__, torch.cuda.get_device_name(), os.cpu_count(), 'CPUs')"

# 1. The GPU flow's CUDA test (and the CPU ones beside it: they take seconds).
timeout 60 python -m pytest -q -rs tests/media/test_flow_torch.py > "$OUT/gpu_tests.txt" 2>&1 || status=1
tail -3 "$OUT/gpu_tests.txt"

# 2. Flow cost and accuracy per setting, five 1080p clips, 8 frames each.
timeout 90 python dev/temporal/flow_cost.py --device cuda --size 1920 --frames 8 \
  dis:fast@640 dis:fast@640:t1 dis:fast@480 dis:fast@480:t1 dis:fast@384:t1 \
  dis:ultrafast@640 dis:ultrafast@640:t1 dis:ultrafast@480:t1 dis:ultrafast@384:t1 torch@640 torch@480 \
  > "$OUT/flow_cost.md" 2>&1 || status=1
cat "$OUT/flow_cost.md"

# 3. Frames/s through the video path, 1080p pan, 90 frames, best of 2: the flow options' modes.
timeout 150 python dev/temporal/attribute_speed.py --size 1920 --frames 90 --repeats 2 \
  --modes plain,temporal,no-dis,dis-t1,dis-fast480-t1,dis-ultrafast640-t1,dis-ultrafast480-t1,torch-flow,torch-flow480 \
  > "$OUT/attribute.md" 2>&1 || status=1
cat "$OUT/attribute.md"

# 4. Quality of each flow option at 1080p with the shipped blend (16 frames, four clips: the
#    moving subject is where flow errors show, the cut checks the restart). First row: shipped.
if temporal_data; then
  B=ship=1,torch=1,a=0.9,s=0.75,vr=0.5   # the shipped blend (media/options.py)
  timeout 200 python dev/temporal/sweep.py --device cuda --size 1920 --frames 16 --cache "" \
    --vgg-weights "$TEMPORAL_VGG" --painting "$TEMPORAL_PAINTING" \
    --clips pan,subject,rotation,cut \
    "$B,preset=fast" "$B,preset=fast,fs=480" "$B,preset=ultrafast" "$B,preset=ultrafast,fs=480" \
    "$B,flow=torch" "$B,flow=torch,fs=480" \
    > "$OUT/sweep_flow.txt" 2> "$OUT/sweep_flow.log" || status=1
  cat "$OUT/sweep_flow.txt"
else
  echo "sweep skipped: carry .data/temporal/ (VGG weights and candy.jpg)" | tee "$OUT/sweep_flow.txt"; status=1
fi
bash dev/device/pack_out.sh "$OUT" || status=1
exit $status
