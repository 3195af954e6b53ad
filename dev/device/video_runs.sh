#!/usr/bin/env bash
# Issue 40's "10 runs out of 10": `styleforge video --temporal` on one generated 1080p H.264 + AAC
# clip (a pan over the asset photos, 60 frames), RUNS times in a row (default 10). A run counts
# only if it exits 0, its output keeps all 60 frames and its audio packets equal the input's, byte
# for byte. About 2 minutes on one H200. Needs PyAV importable. Results: $OUT/video_runs.txt (one
# line per run, then "ok: N of RUNS"); exit 1 if any run failed.
set -uo pipefail
. "$(dirname "$0")/common.sh"
video_start
RUNS=${RUNS:-10}
CLIP="$OUT/clip1080.mp4"
python - "$CLIP" <<'EOF' || exit 1
import sys
import numpy as np
from PIL import Image
from styleforge.bench.temporal_clips import render_scene, write_clip
photos = [np.asarray(Image.open(f"styleforge/assets/{n}.jpg").convert("RGB")) for n in ("chelsea", "coffee", "astronaut")]
write_clip(sys.argv[1], render_scene("pan", photos, (1080, 1920), 60))
EOF
check() {   # check OUTPUT: 60 frames, the input's audio packets unchanged
  python - "$1" "$CLIP" <<'EOF'
import sys
import av
def audio(path):
    with av.open(path) as c:
        return [bytes(p) for p in c.demux(c.streams.audio[0]) if p.size]
with av.open(sys.argv[1]) as c:
    frames = sum(1 for _ in c.decode(video=0))
assert frames == 60, f"{frames} frames"
assert audio(sys.argv[1]) == audio(sys.argv[2]), "audio changed"
EOF
}
: > "$OUT/video_runs.txt"
ok=0
for i in $(seq 1 "$RUNS"); do
  start=$(date +%s%N)
  if timeout 60 python -m styleforge video "$CLIP" -o "$OUT/steady.mp4" --overwrite --device cuda --temporal \
       >> "$OUT/video_runs.txt" 2>&1 && check "$OUT/steady.mp4" >> "$OUT/video_runs.txt" 2>&1; then
    echo "run $i ok $(( ($(date +%s%N) - start) / 1000000 )) ms" >> "$OUT/video_runs.txt"; ok=$((ok + 1))
  else
    echo "run $i FAILED" >> "$OUT/video_runs.txt"
  fi
done
echo "ok: $ok of $RUNS" | tee -a "$OUT/video_runs.txt"
rm -f "$OUT"/*.mp4
[ "$ok" = "$RUNS" ]
