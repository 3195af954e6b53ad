"""`styleforge bench --startup`: what a one-photo `styleforge stylize` costs from a cold process.

In one process tree: a one-photo 1080p stylization in a fresh interpreter, once untimed for the
bar (it may build kernels and time plans: the `first` run, reported), then `runs` rounds, each
one fresh interpreter that only imports torch and (where CUDA exists) makes its context — the
floor any PyTorch command pays — and one fresh one-photo run that finds kernels and plans
cached, their order alternating round by round (`schedule`), so drift on a busy host falls on
both sides. Every time is spawn to the process gone, as the parent sees it, and both end the way
the `styleforge` command does (`cli.leave`), so the exit counts on both sides of the bar. The bar
compares medians (`verdict`): one import slowed by the host's other work decides nothing.

Each run is cut into consecutive parts that add up to its `total` exactly (`PARTS`):
`interpreter` (spawn to the driver's first line), `imports` (the CLI module before `main`, and
torch's own import wherever the command makes it: the driver imports nothing else first, so
what the command runs beside that import, the CUDA driver's start, overlaps it here too), `cli`
(parsing, job planning, to the model load), `model_load` (device, weights,
engine, kernel library), `codec` (choosing Pillow or nvJPEG), `decode`, `stage` (into pinned
memory), `stylize` (the network call to the result on the host: plan and compute), `write`,
`other` (every moment of `main` none of those covers; `other_where` names the largest gaps by the
parts around them), and `exit` (main's return to the process gone). `details` holds what runs
inside a part and does not add: `cuda_init` (the first CUDA context), `weights`, `build_model`,
`runner` (the engine), `kernels` (loading the CUDA library), `compute` (the same call again,
warm, timed in the first run only so that the timed runs exit as a user's run would), `plan`
(stylize − compute), and the exit's own parts (`exit_threads`: threading's shutdown, which stops
thread pools and waits for threads the command left, `exit_atexit`: the atexit handlers,
`exit_teardown`: after them to the process gone, which `cli.leave` keeps to the kernel's part).
It also lists the heavy modules each run imported with who imported each first, the codec
chosen and the plan cache's entries. One row (kind "startup") per call, holding every sample:
each floor, each timed run's parts, and per part its median over the timed runs (the medians of
the parts need not add up to the median total). The bar: the median timed total ≤ the median
floor + 1.5 s. Not here: the engine's own benchmarks (`bench/endtoend.py`).
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .results import Row

BAR_S = 1.5
RUNS = 3      # floors and timed one-photo runs each, alternating (`--startup-runs`)
HEAVY = ("torch._dynamo", "torch._inductor", "torch.distributed.fsdp", "sympy", "triton", "torchvision",
         "rich", "gradio", "av", "cv2", "matplotlib", "setuptools", "torch.utils.cpp_extension", "nncf",
         "scipy", "networkx", "onnx", "onnxruntime", "ray")
# The parts that partition a run, in order; `other` is what none of the timed calls covers.
PARTS = ("interpreter", "imports", "cli", "model_load", "codec", "decode", "stage", "stylize", "write",
         "other", "exit")

# The floor ends as the command does (`cli.leave`: atexit handlers, then os._exit), so the bar
# compares what StyleForge adds, not two ways of exiting.
_FLOOR = """
import atexit, json, os, sys, time
import torch
if sys.argv[1] == "cuda":
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
print(json.dumps({"end": time.time()}), flush=True)
atexit._run_exitfuncs()
os._exit(0)
"""

# The driver: the real CLI, entered as the `styleforge` command enters it (nothing imported first,
# so what the command overlaps with torch's import is overlapped here too), with library
# functions wrapped as their modules finish importing (so every later lookup gets the wrapper)
# to timestamp their calls under a label: a part's name (`PARTS`) or a detail's. torch's own
# import, wherever the CLI triggers it, is timed as part of `imports`.
_DRIVER = """
import atexit, json, sys, time, traceback
first = time.time()
args, HEAVY, warm = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3] == "warm"
events, importers, results = [], {}, {}
# Runs last of the atexit handlers (they run in reverse order): what follows is the process's end
# (after `cli.leave`'s os._exit, the kernel's part: memory, files, the CUDA context).
atexit.register(lambda: print(json.dumps({"atexit_done": time.time()}), file=sys.__stderr__, flush=True))

class Watch:   # who imports each heavy module first: the chain to cut
    def find_spec(self, name, path=None, target=None):
        if name in HEAVY and name not in importers:
            stack = traceback.extract_stack()[:-1]
            if any(f.name == "find_spec" and "util" in f.filename for f in stack[-3:]):   # a look, no import
                return None
            importers[name] = [f"{f.filename}:{f.lineno}" for f in stack if "importlib" not in f.filename][-8:]
        return None

def timed(label, owner, name, once=False):
    inner = getattr(owner, name, None)
    if inner is None:
        return
    def call(*a, **k):
        start = time.time()
        try:
            results[label] = inner(*a, **k)
            return results[label]
        finally:
            if not (once and any(e[0] == label for e in events)):
                events.append((label, start, time.time()))
    setattr(owner, name, call)

# module → (label, attribute, once) wrapped when the module has run; "torch" itself: its import.
WRAP = {
    "styleforge.api": [("model_load", "get_stylizer", False)],
    "styleforge.media.images": [("codec", "resolve_codec", False), ("decode", "load_image", False),
                                ("decode", "decode_jpeg_gpu", False), ("host_pixels", "host_pixels", False),
                                ("write", "save_image", False), ("write", "encode_jpeg_gpu", False),
                                ("write", "atomic_write", False)],
    "styleforge.media.engine_stage": [("stage", "EngineStage.stage", False)],
    "styleforge.engine.pipeline": [("forward", "Stylizer._forward", False), ("weights", "load_weights", False),
                                   ("build_model", "build_model", False), ("runner", "make_runner", False)],
    "styleforge.kernels.build": [("kernels", "build_and_load", False)],
    # called often; the first call makes the context
    "torch.cuda": [("cuda_init", "_lazy_init", True)],
}

class Wrap:
    def find_spec(self, name, path=None, target=None):
        if name not in WRAP and name != "torch":
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, Watch) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        run = spec.loader.exec_module
        def exec_module(module):
            start = time.time()
            try:
                run(module)
            finally:
                if name == "torch":
                    events.append(("imports", start, time.time()))
            for label, attribute, once in WRAP.get(name, ()):
                *path_, last = attribute.split(".")
                owner = module
                for part in path_:
                    owner = getattr(owner, part)
                timed(label, owner, last, once)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path[:0] = [Watch(), Wrap()]
from styleforge.cli import leave, main
main_start = time.time()
code = main(["stylize", *args])
end = time.time()
report = {"code": code, "first": first, "main_start": main_start, "end": end, "events": events,
          "importers": {k: v for k, v in importers.items() if k in sys.modules},
          "heavy": [m for m in HEAVY if m in sys.modules], "codec": results.get("codec")}
stylizer = results.get("model_load")
cache = getattr(getattr(getattr(stylizer, "runner", None), "layer_choices", None), "plan_cache", None)
report["plan_cache_entries"] = len(cache._entries) if cache is not None else None
if code == 0 and warm and stylizer is not None:
    from PIL import Image
    import numpy, torch
    photo = torch.from_numpy(numpy.array(Image.open(args[0]).convert("RGB"))).permute(2, 0, 1)[None]
    for _ in range(2):
        start = time.time()
        stylizer(photo)
        if stylizer.device.type == "cuda":
            torch.cuda.synchronize()
        report["compute"] = time.time() - start
# Registered last, so it runs first of the atexit handlers: after any wait for threads.
atexit.register(lambda: print(json.dumps({"atexit_start": time.time()}), file=sys.__stderr__, flush=True))
report["exit_start"] = time.time()
print(json.dumps(report), file=sys.__stderr__, flush=True)
leave(code)   # as the `styleforge` command ends
"""


def _spawn(code: str, *args: str, cwd: Path | None = None) -> tuple[float, float, dict, str]:
    """(spawned, gone, the child's JSON lines merged, its stderr)."""
    spawned = time.time()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd)
    gone = time.time()
    stream = done.stdout if code is _FLOOR else done.stderr
    report: dict = {}
    for line in stream.splitlines():
        if line.startswith("{"):
            try:
                report.update(json.loads(line))
            except ValueError:
                continue
    if done.returncode != 0 and "end" not in report:
        raise RuntimeError(f"bench --startup: the child failed (rc {done.returncode}): {done.stderr[-2000:]}")
    return spawned, gone, report, done.stderr


def floor_seconds(device: str) -> tuple[float, float]:
    """(spawn to exit, of which the exit) of `import torch` (+ a CUDA context) in a fresh interpreter."""
    spawned, gone, report, _ = _spawn(_FLOOR, device)
    return gone - spawned, gone - report["end"]


def _spans(events: list, until: float) -> dict[str, tuple[float, float]]:
    """label → (first start, last end) of its calls that began before `until`."""
    spans: dict[str, tuple[float, float]] = {}
    for name, start, end in events:
        if start > until:   # the warm calls made after the timed run
            continue
        seen = spans.get(name)
        spans[name] = (min(start, seen[0]), max(end, seen[1])) if seen else (start, end)
    return spans


def partition(window: tuple[float, float], spans: dict[str, tuple[float, float]]) -> tuple[dict, list]:
    """Cut `window` into labelled pieces: each moment goes to the latest-started span covering it,
    or to "other". → ({label: seconds}, [(seconds, "after X, before Y")] for the "other" pieces)."""
    lo, hi = window
    clipped = {k: (max(a, lo), min(b, hi)) for k, (a, b) in spans.items() if min(b, hi) > max(a, lo)}
    cuts = sorted({lo, hi, *(t for span in clipped.values() for t in span)})
    seconds: dict[str, float] = {}
    gaps: list[tuple[float, str]] = []
    previous = "start"
    for a, b in zip(cuts, cuts[1:]):
        covering = [(s, k) for k, (s, e) in clipped.items() if s <= a and e >= b]
        label = max(covering)[1] if covering else "other"
        seconds[label] = seconds.get(label, 0.0) + (b - a)
        if label == "other":
            following = min(((s, k) for k, (s, _) in clipped.items() if s >= b), default=(hi, "end"))[1]
            gaps.append((b - a, f"after {previous}, before {following}"))
        else:
            previous = label
    return seconds, gaps


def parts_of(spawned: float, gone: float, report: dict) -> tuple[dict, dict, list]:
    """(parts that add up to `total`, details inside them, where `other` went) for one run."""
    spans = _spans(report["events"], report["end"])
    # The stylize part: the network call to its result on the host (host_pixels waits for it).
    if "forward" in spans:
        start, end = spans.pop("forward")
        spans["stylize"] = (start, max(end, spans.pop("host_pixels", (start, end))[1]))
    top = {k: v for k, v in spans.items() if k in PARTS}
    inside, gaps = partition((report["main_start"], report["end"]), top)
    # main's start to the first timed call is the CLI (parsing, planning), not "other".
    if gaps and gaps[0][1].startswith("after start"):
        inside["cli"] = inside.get("cli", 0.0) + gaps[0][0]
        inside["other"] -= gaps[0][0]
        gaps = gaps[1:]
    exit_s = gone - report["exit_start"]
    # imports: the driver's own (the CLI module) and torch's, wherever the command imports it.
    imports = report["main_start"] - report["first"] + inside.pop("imports", 0.0)
    parts = {"interpreter": report["first"] - spawned, "imports": imports, **inside, "exit": exit_s}
    # Between main's return and the exit the driver writes its report (and, in the first run,
    # makes the warm call): not the command's, so in no part.
    parts["total"] = (report["end"] - spawned) + exit_s
    ordered = {k: round(parts.get(k, 0.0), 3) for k in PARTS}
    ordered["total"] = round(parts["total"], 3)
    details = {k: round(e - s, 3) for k, (s, e) in spans.items() if k not in PARTS}
    if "compute" in report:
        details["compute"] = round(report["compute"], 3)
    if "atexit_start" in report and "atexit_done" in report:
        details["exit_threads"] = round(report["atexit_start"] - report["exit_start"], 3)
        details["exit_atexit"] = round(report["atexit_done"] - report["atexit_start"], 3)
        details["exit_teardown"] = round(gone - report["atexit_done"], 3)
    where = [f"{text}: {s:.3f} s" for s, text in sorted(gaps, reverse=True)[:4] if s >= 0.005]
    return ordered, details, where


def _photo(folder: Path, size: tuple[int, int]) -> Path:
    """A 1080p JPEG of random 160×120 tiles: a photo's size and entropy, made in milliseconds."""
    import numpy as np
    from PIL import Image
    photo = folder / "photo.jpg"
    block = np.random.default_rng(0).integers(0, 256, (120, 160, 3), dtype=np.uint8)
    tiles = np.tile(block, (size[1] // 120 + 1, size[0] // 160 + 1, 1))[:size[1], :size[0]]
    Image.fromarray(tiles).save(photo)
    return photo


def _log_run(label: str, run: dict, log) -> None:
    log(f"{label}: " + ", ".join(f"{k} {v:.2f} s" for k, v in run["parts"].items()))
    log("  inside: " + ", ".join(f"{k} {v:.2f} s" for k, v in run["details"].items()))
    if run["other_where"]:
        log("  other: " + "; ".join(run["other_where"]))
    log(f"  codec {run['codec']}, plan cache entries {run['plan_cache_entries']}")
    for name, stack in run["importers"].items():
        log(f"  imported {name} from: " + " <- ".join(reversed(stack)))


def schedule(runs: int) -> list[str]:
    """The timed spawns after the first run: `runs` rounds of one floor and one one-photo run,
    the floor first in even rounds and second in odd ones."""
    order: list[str] = []
    for i in range(runs):
        order += ["floor", "stylize"] if i % 2 == 0 else ["stylize", "floor"]
    return order


def verdict(floors: list[float], totals: list[float]) -> tuple[float, float, bool]:
    """(median floor, median one-photo total, within the bar): medians, so that one spawn slowed
    by the host's other work does not decide."""
    floor, total = statistics.median(floors), statistics.median(totals)
    return floor, total, total <= floor + BAR_S


def median_parts(runs: list[dict]) -> dict[str, dict[str, float]]:
    """Per part and per detail, the median over `runs` (those present in every run)."""
    def medians(key: str) -> dict[str, float]:
        names = [k for k in runs[0][key] if all(k in run[key] for run in runs)]
        return {k: round(statistics.median(run[key][k] for run in runs), 3) for k in names}
    return {"parts": medians("parts"), "details": medians("details")}


def _one_photo(args: list[str], warm: bool, root: Path) -> dict:
    spawned, gone, report, stderr = _spawn(_DRIVER, json.dumps(args), json.dumps(HEAVY),
                                           "warm" if warm else "cold", cwd=root)
    if report.get("code") != 0:
        raise RuntimeError(f"bench --startup: a one-photo run failed: {stderr[-2000:]}")
    parts, details, where = parts_of(spawned, gone, report)
    return {"parts": parts, "details": details, "other_where": where, "heavy": report["heavy"],
            "importers": report["importers"], "codec": report["codec"],
            "plan_cache_entries": report.get("plan_cache_entries")}


def run_startup(device: str, style: str | None = None, size: tuple[int, int] = (1920, 1080),
                log=print, runs: int = RUNS) -> Row:
    """The first run, then `runs` floors and timed one-photo runs alternating, as one row (kind
    "startup"); see the module docstring."""
    if runs < 1:
        raise ValueError(f"bench --startup needs at least 1 timed run, got {runs}")
    if device == "auto":
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    root = Path(__file__).resolve().parents[2]
    floor_name = f"import torch{' + CUDA init' if device == 'cuda' else ''}"
    floors: list[tuple[float, float]] = []
    timed: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="styleforge-startup-") as folder:
        photo = _photo(Path(folder), size)
        args = [str(photo), "-o", str(Path(folder) / "out.jpg"), "--device", device, "--overwrite"]
        if style:
            args += ["--style", style]
        first = _one_photo(args, True, root)
        _log_run("first run (untimed for the bar)", first, log)
        for what in schedule(runs):
            if what == "floor":
                floors.append(floor_seconds(device))
                log(f"{floor_name} {len(floors)}/{runs}: {floors[-1][0]:.2f} s "
                    f"(spawn to exit; the exit {floors[-1][1]:.2f} s)")
            else:
                timed.append(_one_photo(args, False, root))
                _log_run(f"timed run {len(timed)}/{runs}", timed[-1], log)
    compute = first["details"].get("compute")
    for run in (first, *timed):   # the warm call, made once, splits each run's stylize into plan and compute
        if compute is not None and run["parts"]["stylize"]:
            run["details"]["plan"] = round(max(0.0, run["parts"]["stylize"] - compute), 3)
    totals = [run["parts"]["total"] for run in timed]
    floor, total, within = verdict([f for f, _ in floors], totals)
    medians = median_parts(timed)
    log(f"medians of {runs}: {floor_name} {floor:.2f} s; one photo " +
        ", ".join(f"{k} {v:.2f} s" for k, v in medians["parts"].items()))
    log(f"  samples: {floor_name} " + " ".join(f"{f:.2f}" for f, _ in floors) +
        "; one photo " + " ".join(f"{t:.2f}" for t in totals))
    log(f"one photo {total:.2f} s (median); bar (median floor + {BAR_S} s) {floor + BAR_S:.2f} s: "
        f"{'within' if within else 'OVER'}")
    return Row("startup", provider=device, op="stylize-one-photo", size=f"{size[0]}x{size[1]}",
               status="ok" if within else "failed", error="" if within else "median run over the bar",
               median_ms=round(total * 1000, 1), reps=runs,
               notes={"floor_s": round(floor, 3), "floor_exit_s": round(statistics.median(e for _, e in floors), 3),
                      "bar_s": round(floor + BAR_S, 3), "floor_samples": [round(f, 3) for f, _ in floors],
                      "floor_exit_samples": [round(e, 3) for _, e in floors],
                      "totals": totals, "order": schedule(runs), "first": first, "median": medians,
                      "runs": timed})
