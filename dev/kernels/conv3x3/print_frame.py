"""Print the fused plan's 512² frame timeline from profile_frame.py's JSON: each kernel's start and
duration (µs). Used by the device scripts.
    python3 dev/kernels/conv3x3/print_frame.py $OUT/profile_frame.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

for frame in json.loads(Path(sys.argv[1]).read_text()):
    if frame.get("plan") == "conv3x3":
        print(frame["frame"], frame["ms_per_frame"], frame["span_us"])
        for name, dur, ts in frame["rows"]:
            print(f"  {ts:8.1f} {dur:7.2f} {name[:60]}")
