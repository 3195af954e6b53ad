"""Helpers for the memory-budget tests: one `styleforge stylize` call measured in a fresh process.

Not a test module. `measure(args)` runs a fresh interpreter that first stylizes a tiny image with
the same engine flags (imports, model, allocator warm: the process's fixed baseline), then runs
`styleforge stylize *args` and reports the call's exit code, its stderr and how far its peak
resident set rose above the resident set it started from: the memory that call took (Linux:
the peak is restarted through /proc/self/clear_refs, so an earlier peak cannot hide in it).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r"""
import contextlib, io, json, sys
from styleforge.cli import main
args, warm, warm_out = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
flags = [v for i, a in enumerate(args) if a in ("--stroke-scale", "--tiling") for v in (a, args[i + 1])]
with contextlib.redirect_stderr(io.StringIO()):
    main(["stylize", warm, "-o", warm_out, "--device", "cpu", "--overwrite", *flags])
def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))
start = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:   # the peak (VmHWM) restarts from the resident set now
    f.write("5")
err = io.StringIO()
with contextlib.redirect_stderr(err):
    code = main(["stylize", *args])
peak = status("VmHWM")
print(json.dumps({"code": code, "grew": peak - start, "stderr": err.getvalue()}), file=sys.__stderr__)
"""


def make_jpeg(path: Path, width: int, height: int) -> Path:
    """A photo-like JPEG (a random block tiled, so encoding a huge one stays quick)."""
    block = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    tiled = np.tile(block, (-(-height // 256), -(-width // 256), 1))[:height, :width]
    limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None   # Pillow refuses to make > 179 MP
    try:
        Image.fromarray(tiled).save(path, quality=85)
    finally:
        Image.MAX_IMAGE_PIXELS = limit
    return path


def measure(args: list[str], tmp: Path, timeout: float = 900) -> dict:
    warm = tmp / "warm.png"
    if not warm.exists():
        Image.new("RGB", (48, 32), (90, 120, 150)).save(warm)
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args), str(warm), str(tmp / "warm_out.png")],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    lines = done.stderr.strip().splitlines()
    assert lines, f"probe died (rc {done.returncode})"
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        raise AssertionError(done.stderr[-3000:]) from None
