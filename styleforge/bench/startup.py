"""`styleforge bench --startup`: what a one-photo `styleforge stylize` costs from a cold process.

In one process tree: a fresh interpreter that only imports torch and (where CUDA exists) makes
its context — the floor any PyTorch command pays — then a one-photo 1080p stylization run
twice, each in a fresh interpreter (the first may build kernels and time plans; the second should
find both cached). Each run reports its parts, from the moment the parent spawned it:
`interpreter` (to the driver's first line), `imports` (to the model load: torch, StyleForge,
argument parsing), `model_load` (device, weights, engine, kernel library), `decode`, `stylize`
(the first network call: plan and compute, to the result on the host), `write`, `total`; then,
outside the timed run, `compute` (the same call again, warm) gives `plan` = stylize − compute.
It also lists the heavy modules the run imported and who imported `torch._dynamo` first, and
the plan cache's entries. One row (kind "startup") per call; the bar: the second run's total ≤
the floor + 1.5 s. Not here: the engine's own benchmarks (`bench/endtoend.py`).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .results import Row

BAR_S = 1.5
HEAVY = ("torch._dynamo", "torch._inductor", "torch.distributed.fsdp", "sympy", "triton", "rich", "gradio",
         "av", "cv2", "matplotlib", "setuptools", "torch.utils.cpp_extension")

_FLOOR = """
import json, sys, time
import torch
if sys.argv[1] == "cuda":
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
print(json.dumps({"end": time.time()}))
"""

# The driver: the real CLI, with a few library functions wrapped to timestamp their calls.
_DRIVER = """
import json, sys, time, traceback
first = time.time()
spawned, args = float(sys.argv[1]), json.loads(sys.argv[2])
HEAVY = json.loads(sys.argv[3])
events, importer, results = [], {}, {}

class Watch:   # who imports torch._dynamo first: the chain to cut, if any
    def find_spec(self, name, path=None, target=None):
        if name == "torch._dynamo" and not importer:
            importer["stack"] = [f"{f.filename}:{f.lineno}" for f in traceback.extract_stack()[:-1]
                                 if "importlib" not in f.filename][-8:]
        return None
sys.meta_path.insert(0, Watch())

def timed(owner, name):
    inner = getattr(owner, name)
    def call(*a, **k):
        start = time.time()
        try:
            results[name] = inner(*a, **k)
            return results[name]
        finally:
            events.append((name, start, time.time()))
    setattr(owner, name, call)

from styleforge.cli import main
import styleforge.api as api, styleforge.media.images as images, styleforge.media.engine_stage as stage
from styleforge.engine.pipeline import Stylizer
timed(api, "get_stylizer"); timed(images, "load_image"); timed(images, "save_image")
timed(Stylizer, "_forward"); timed(stage, "host_pixels")
code = main(["stylize", *args])
end = time.time()
report = {"code": code, "first": first, "end": end, "events": events, "dynamo_importer": importer.get("stack"),
          "heavy": [m for m in HEAVY if m in sys.modules]}
if code == 0:
    import torch
    from PIL import Image
    import numpy
    stylizer = results.get("get_stylizer")
    photo = torch.from_numpy(numpy.array(Image.open(args[0]).convert("RGB"))).permute(2, 0, 1)[None]
    if stylizer is not None:
        for _ in range(2):
            start = time.time()
            stylizer(photo)
            if stylizer.device.type == "cuda":
                torch.cuda.synchronize()
            report["compute"] = time.time() - start
        cache = getattr(getattr(stylizer, "runner", None), "plan_cache", None)
        report["plan_cache_entries"] = len(cache._entries) if cache is not None else None
print(json.dumps(report), file=sys.__stderr__)
"""


def _spawn(code: str, *args: str, cwd: Path | None = None) -> tuple[float, dict, str]:
    spawned = time.time()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd)
    stream = done.stdout if code is _FLOOR else done.stderr
    lines = [line for line in stream.strip().splitlines() if line.startswith("{")]
    if done.returncode != 0 and not lines:
        raise RuntimeError(f"bench --startup: the child failed (rc {done.returncode}): {done.stderr[-2000:]}")
    return spawned, json.loads(lines[-1]), done.stderr


def floor_seconds(device: str) -> float:
    """`import torch` (+ a CUDA context) in a fresh interpreter, spawn to exit."""
    spawned, report, _ = _spawn(_FLOOR, device)
    return report["end"] - spawned


def _parts(spawned: float, report: dict) -> dict:
    spans: dict[str, tuple[float, float]] = {}
    for name, start, end in report["events"]:
        if start > report["end"]:   # the warm call made after the timed run
            continue
        first = spans.get(name)
        spans[name] = (min(start, first[0]), max(end, first[1])) if first else (start, end)
    parts = {"interpreter": report["first"] - spawned}
    if "get_stylizer" in spans:
        parts["imports"] = spans["get_stylizer"][0] - report["first"]
        parts["model_load"] = spans["get_stylizer"][1] - spans["get_stylizer"][0]
    if "load_image" in spans:
        parts["decode"] = spans["load_image"][1] - spans["load_image"][0]
    if "_forward" in spans:
        done = spans.get("host_pixels", spans["_forward"])[1]
        parts["stylize"] = max(done, spans["_forward"][1]) - spans["_forward"][0]
    if "save_image" in spans:
        parts["write"] = spans["save_image"][1] - spans["save_image"][0]
    if "compute" in report and "stylize" in parts:
        parts["compute"] = report["compute"]
        parts["plan"] = max(0.0, parts["stylize"] - report["compute"])
    parts["total"] = report["end"] - spawned
    return {key: round(value, 3) for key, value in parts.items()}


def run_startup(device: str, style: str | None = None, size: tuple[int, int] = (1920, 1080),
                log=print) -> Row:
    """The floor and two one-photo runs, as one row (kind "startup"); see the module docstring."""
    import numpy as np
    from PIL import Image
    if device == "auto":
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="styleforge-startup-") as folder:
        photo = Path(folder) / "photo.jpg"
        rng = np.random.default_rng(0)
        block = rng.integers(0, 256, (120, 160, 3), dtype=np.uint8)
        Image.fromarray(np.tile(block, (size[1] // 120 + 1, size[0] // 160 + 1, 1))[:size[1], :size[0]]).save(photo)
        floor = floor_seconds(device)
        log(f"import torch{' + CUDA init' if device == 'cuda' else ''}: {floor:.2f} s")
        args = [str(photo), "-o", str(Path(folder) / "out.jpg"), "--device", device, "--overwrite"]
        if style:
            args += ["--style", style]
        runs = []
        for label in ("first", "second"):
            spawned, report, stderr = _spawn(_DRIVER, "0", json.dumps(args), json.dumps(HEAVY), cwd=root)
            if report.get("code") != 0:
                raise RuntimeError(f"bench --startup: the {label} run failed: {stderr[-2000:]}")
            parts = _parts(spawned, report)
            runs.append({"parts": parts, "heavy": report["heavy"], "dynamo_importer": report["dynamo_importer"],
                         "plan_cache_entries": report.get("plan_cache_entries")})
            log(f"{label} run: " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
            if report["heavy"]:
                log(f"  imported: {', '.join(report['heavy'])}")
            if report["dynamo_importer"]:
                log("  torch._dynamo first imported from: " + " <- ".join(reversed(report["dynamo_importer"])))
    second = runs[1]["parts"]["total"]
    within = second <= floor + BAR_S
    log(f"second run {second:.2f} s; bar (floor + {BAR_S} s) {floor + BAR_S:.2f} s: "
        f"{'within' if within else 'OVER'}")
    return Row("startup", provider=device, op="stylize-one-photo", size=f"{size[0]}x{size[1]}",
               status="ok" if within else "failed", error="" if within else "second run over the bar",
               median_ms=round(second * 1000, 1), reps=2,
               notes={"floor_s": round(floor, 3), "bar_s": round(floor + BAR_S, 3), "first": runs[0],
                      "second": runs[1]})
