# One device call: where the 512² frame's fused 3×3 launches spend their time, tile by tile
# (frame_phases.py: the package built with SF_TILE_PROFILE, the frame and the chain alone), the
# chain's phase profile at the 128² plane, and the frame's kernel timeline from the PyTorch profiler
# (release build; the 9×9 layers' durations).
#   bash dev/kernels/frame/phases_device.sh
DEVICE_TOPIC=phases
source dev/kernels/device_preamble.sh
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm --format=csv,noheader
timeout 240 python3 dev/kernels/frame/frame_phases.py --out "$OUT" --size 512 > "$OUT/frame_phases.log" 2>&1
echo "frame_phases rc=$?"; grep -vE "^   " "$OUT/frame_phases.log" | cut -c1-400 | head -60
timeout 120 python3 dev/kernels/conv3x3/chain_profile.py --out "$OUT" --size 128 2>&1 | tail -3
timeout 150 python3 dev/kernels/conv3x3/profile_frame.py --out "$OUT" --sizes 512x512 > "$OUT/profile_frame.log" 2>&1
echo "profile_frame rc=$?"
python3 dev/kernels/conv3x3/print_frame.py "$OUT/profile_frame.json"
