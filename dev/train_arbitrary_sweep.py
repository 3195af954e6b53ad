"""Loss-weight sweep of the arbitrary-style model on a multi-GPU machine, one variant per GPU.

phase1: train every variant for --seconds on its own GPU, score each on the held-out paintings
        (`styleforge eval-arbitrary`), rank them: lowest median style ratio among those whose
        median content distance is ≤ CONTENT_CAP (the bar is 1.5; a margin is kept).
phase2: resume every PHASE2 variant from --start (phase 1's winner) for --seconds more (same
        cosine schedule), the GPU tests beside them, then score, time the model alone on GPU 0,
        and pack the winner. Each phase packs its winner for the trip home: slim fp16 weights
        (no encoder), its checkpoint in 15 MB pieces, sample sheets and logs.
Data: `python dev/prepare_arbitrary_data.py`, staged by `dev/device/train_arbitrary.sh stage`. Results: --out (the
device's $OUT).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

DATA = Path("runs/arbitrary-data")   # staged by dev/device/train_arbitrary.sh stage
VGG = DATA / "vgg16_relu5_1.fp16.pth"
RUNS = Path("runs/sweep")
LOGS = RUNS / "logs"          # $OUT takes 8 files at most: logs travel in the tarball
STEPS = 12_000
CONTENT_CAP = 1.4
PHASE1 = {              # name → train-arbitrary flags (everything else: the defaults)
    "g0": [],
    "g1": ["--gram-weight", "1"],
    "g3": ["--gram-weight", "3"],
    "g10": ["--gram-weight", "10"],
}
# Phase 1 (400 s each, 3.5k steps): g0 0.370/0.692, g1 0.423/0.808, g3 0.446/0.938, g10 0.531/1.078
# (median style ratio / content distance): the Gram term hurts both; content has room to spare.
PHASE2 = {
    "s1": [],
    "s3": ["--style-weight", "3", "--local-weight", "0.9"],
    "s3c": ["--style-weight", "3", "--local-weight", "0.9", "--content-weight", "0.5",
            "--identity-pixel-weight", "10", "--identity-feature-weight", "0.25"],
    "s10": ["--style-weight", "10", "--local-weight", "3"],
}


def train(name: str, flags: list[str], gpu: int, seconds: float) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "styleforge", "train-arbitrary", "--vgg-weights", str(VGG),
           "--content-dir", str(DATA / "content"), "--style-dir", str(DATA / "styles"),
           "--run-dir", str(RUNS / name), "--steps", str(STEPS), "--checkpoint-every", "1000",
           "--sample-every", "2000", "--log-every", "100", "--resume", "auto",
           "--max-seconds", str(seconds), "--no-progress", *flags]
    return _on_gpu(cmd, gpu, LOGS / f"{name}.train.log", "a")


def evaluate(name: str, gpu: int, tag: str, device: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "styleforge", "eval-arbitrary",
           "--weights", str(RUNS / name / "arbitrary.safetensors"),
           "--photos", str(DATA / "eval/photos"), "--paintings", str(DATA / "eval/paintings_held_out"),
           "--metric-vgg", str(VGG), "--device", device, "--precision", "bf16",
           "--save-dir", str(RUNS / name / f"eval_{tag}")]
    return _on_gpu(cmd, gpu, LOGS / f"{name}.eval_{tag}.txt")


def _on_gpu(cmd: list[str], gpu: int, log: Path, mode: str = "w") -> subprocess.Popen:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))
    return subprocess.Popen(cmd, env=env, stdout=open(log, mode), stderr=subprocess.STDOUT)


def medians(path: Path) -> tuple[float, float] | None:
    match = re.search(r"median over \d+ pairs\s+([\d.]+)\s+([\d.]+)", path.read_text())
    return (float(match.group(1)), float(match.group(2))) if match else None


def rank(scores: dict[str, tuple[float, float] | None]) -> list[str]:
    ok = [n for n, s in scores.items() if s is not None]
    return sorted(ok, key=lambda n: (scores[n][1] > CONTENT_CAP, scores[n][0]))


def wait(procs: list[subprocess.Popen]) -> list[int]:
    return [p.wait() for p in procs]


def sweep(variants: dict[str, list[str]], seconds: float, tag: str, device: str) -> dict:
    """Train each variant on its own GPU, score each; → {name: (style ratio, content) or None}."""
    names = list(variants)
    print("train", names, wait([train(n, variants[n], i, seconds) for i, n in enumerate(names)]), flush=True)
    print("eval", wait([evaluate(n, i, tag, device) for i, n in enumerate(names)]), flush=True)
    return {n: medians(LOGS / f"{n}.eval_{tag}.txt") for n in names}


def report(summary: dict, out: Path, tag: str) -> None:
    (RUNS / "summary.json").write_text(json.dumps(summary, indent=1))
    (out / f"summary_{tag}.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1), flush=True)


def phase1(out: Path, seconds: float, device: str) -> None:
    scores = sweep(PHASE1, seconds, "p1", device)
    summary = {"phase1": scores, "ranking": rank(scores)}
    report(summary, out, "p1")
    pack(summary["ranking"][0], out, "p1")


def phase2(out: Path, seconds: float, start: Path, device: str) -> None:
    for name in PHASE2:
        (RUNS / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(start, RUNS / name / start.name)
    tests = _on_gpu([sys.executable, "-m", "pytest", "-q", "tests/models/test_arbitrary_gpu.py",
                     "tests/training/test_arbitrary_training.py", "tests/models/test_arbitrary_model.py"],
                    2, LOGS / "gpu_tests.log")
    scores = sweep(PHASE2, seconds, "p2", device)
    print("tests", tests.wait(), flush=True)
    first = RUNS / next(iter(PHASE2)) / "arbitrary.safetensors"
    bench = _on_gpu([sys.executable, "-m", "styleforge.bench.arbitrary", "--weights", str(first)],
                    0, LOGS / "bench_arbitrary.log")
    print("bench", bench.wait(), flush=True)          # alone on its GPU: timings
    summary = {"start": start.name, "phase2": scores, "ranking2": rank(scores)}
    report(summary, out, "p2")
    pack(summary["ranking2"][0], out, "p2")


def pack(name: str, out: Path, tag: str) -> None:
    """Slim weights, the checkpoint in pieces, and sample sheets + eval images in one tarball."""
    import torch

    from styleforge.models.arbitrary import load_arbitrary, save_arbitrary
    from styleforge.models.arbitrary.weights import read_metadata
    run = RUNS / name
    model, meta = load_arbitrary(run / "arbitrary.safetensors")
    meta.pop("format", None), meta.pop("config", None)
    for old in [*out.glob("*.slim.safetensors"), *out.glob("*.part*")]:
        old.unlink()
    slim = out / f"{name}.{tag}.slim.safetensors"
    save_arbitrary(slim, model, meta, dtype=torch.float16, include_encoder=False)
    ckpt = sorted(run.glob("step_*.pt"))[-1]
    subprocess.run(["split", "-b", "15M", "-d", str(ckpt), str(out / f"{name}.{ckpt.name}.part")], check=True)
    with tarfile.open(out / f"sweep_{tag}.tar.gz", "w:gz") as tar:
        for sub in sorted(RUNS.glob("*/samples")) + sorted(RUNS.glob(f"{name}/eval_{tag}")) + [LOGS]:
            tar.add(sub, arcname=str(sub.relative_to(RUNS)))
    print("packed", name, ckpt.name, read_metadata(slim).get("steps"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("phase", choices=("phase1", "phase2"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=470)
    parser.add_argument("--start", type=Path, help="phase2: the checkpoint every variant resumes from")
    parser.add_argument("--device", default="cuda", help="for eval-arbitrary (cpu: a local smoke run)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    if args.phase == "phase1":
        phase1(args.out, args.seconds, args.device)
    else:
        phase2(args.out, args.seconds, args.start, args.device)


if __name__ == "__main__":
    main()
