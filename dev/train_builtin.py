"""Train the built-in styles on the GPU machine, one after another in one process.

Run from the repository root, with the shared data copied to `data/`:

    python dev/train_builtin.py --steps 3000 --max-seconds-per-style 52 --pack-dir "$OUT"

The VGG, the content set (on the GPU) and, with --compile, the compiled loss graph are loaded
once and reused for every style. Each style is written the moment it finishes — its fp16
safetensors, a sample sheet, its row in `train_log.json` with steps, seconds, images/s, final
losses and the held-out style-loss ratios — because the device call may be cut off. With
--pack-dir the results are re-packed after every style into at most three `styles_K.tar` (three
styles, ~10 MiB each) and one `logs.tar.gz`, to fit the device's 8-files-of-16-MiB return rule.
`--concurrent K` runs K worker processes (round-robin over the styles; one GPU each when there
are several GPUs) and the parent packs. This is a dev tool: it is not imported by the package.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training import Trainer  # noqa: E402
from styleforge.training.catalogue import BUILTIN_STYLES, get  # noqa: E402
from styleforge.training.data import load_content, place  # noqa: E402
from styleforge.training.evaluate import evaluate_style, summarise  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402

log = logging.getLogger("train_builtin")
STYLES_PER_TAR = 3
TAR_LIMIT = 15 * 2**20


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--styles", default=",".join(s.name for s in BUILTIN_STYLES),
                   help="comma-separated built-in names (default: all nine)")
    p.add_argument("--steps", type=int, default=3000, help="steps per style")
    p.add_argument("--max-seconds-per-style", type=float, default=None, metavar="S")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=256)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--vgg-weights", default="data/vgg16_relu4_3.fp16.pth")
    p.add_argument("--content-dir", default="data/content")
    p.add_argument("--paintings-dir", default="data/styles")
    p.add_argument("--out-dir", default="out/builtin", help="weights, samples and logs")
    p.add_argument("--model", choices=("full", "slim"), default="full",
                   help="slim: the half-width network, distilled from --teacher-dir's full one")
    p.add_argument("--teacher-dir", default="styleforge/styles", help="full networks to distil (--model slim)")
    p.add_argument("--distill-weight", type=float, default=1e8, help="(--model slim) weight of the distill term")
    p.add_argument("--pack-dir", default=None, help="where the tarballs go (e.g. $OUT)")
    p.add_argument("--concurrent", type=int, default=1, metavar="K", help="K worker processes")
    p.add_argument("--no-eval", dest="evaluate", action="store_false",
                   help="skip the held-out style-loss ratios")
    p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def log_path(out_dir: Path, worker: int | None) -> Path:
    return out_dir / ("train_log.json" if worker is None else f"train_log.worker{worker}.json")


def write_json(path: Path, data) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def train_styles(args: argparse.Namespace, names: list[str], out_dir: Path, on_done=None) -> None:
    """Train `names` in order, writing each result as soon as it exists; then call on_done()."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    amp = torch.bfloat16 if device.type == "cuda" else torch.float32
    t0 = time.perf_counter()
    vgg = load_vgg16(args.vgg_weights, device, amp)
    eval_vgg = load_vgg16(args.vgg_weights, device, torch.float32) if args.evaluate else None
    content = place(load_content(args.content_dir, args.image_size, args.seed), device)
    log.info("loaded VGG and %d photos in %.1f s", len(content), time.perf_counter() - t0)
    rows_path = log_path(out_dir, args.worker)
    rows = json.loads(rows_path.read_text()) if rows_path.is_file() else []
    for name in names:
        style = get(name)
        config = style.config(
            args.paintings_dir, content_dir=args.content_dir, out=str(out_dir / f"{name}.safetensors"),
            vgg_weights=args.vgg_weights, steps=args.steps, batch_size=args.batch_size,
            image_size=args.image_size, seed=args.seed, compile=args.compile,
            max_seconds=args.max_seconds_per_style, checkpoint_every=0, sample_every=0,
            checkpoint_dir=str(out_dir / "runs" / name), keep_checkpoints=1, log_every=250,
            progress=False, device=device.type, **distillation(args, name))
        started = time.perf_counter()
        result = Trainer(config, vgg=vgg, content=content).run()
        sheet = max((out_dir / "runs" / name / "samples").glob("step_*.png"))
        (out_dir / "samples").mkdir(exist_ok=True)
        shutil.copyfile(sheet, out_dir / "samples" / f"{name}.png")
        row = {"style": name, "painting": style.painting_file, "steps": result.steps,
               "seconds": round(result.seconds, 2), "wall_seconds": round(time.perf_counter() - started, 2),
               "images_per_s": round(result.images_per_s, 1), "final_losses": result.losses,
               "stopped_early": result.stopped_early, "bytes": result.out.stat().st_size,
               "sha256": sha256(result.out), "device": str(torch.cuda.get_device_name(device)
                                                           if device.type == "cuda" else "cpu"),
               "history": result.history}
        if eval_vgg is not None:
            scores = evaluate_style(name, result.out, Path(args.paintings_dir) / style.painting_file,
                                    default_photos(), eval_vgg, device=device.type)
            row["heldout"] = summarise(scores)[0]
            if args.model == "slim":     # the teacher's numbers on the same photos, for the comparison
                teacher = evaluate_style(name, Path(args.teacher_dir) / f"{name}.safetensors",
                                         Path(args.paintings_dir) / style.painting_file,
                                         default_photos(), eval_vgg, device=device.type)
                row["teacher_heldout"] = summarise(teacher)[0]
        rows = [r for r in rows if r["style"] != name] + [row]
        write_json(rows_path, rows)
        log.info("%s: %d steps in %.1f s, %.0f img/s, losses %s%s", name, result.steps, result.seconds,
                 result.images_per_s, {k: f"{v:.3g}" for k, v in result.losses.items()},
                 f", held-out ratio {row['heldout']['ratio']:.3f}" if "heldout" in row else "")
        if on_done is not None:
            on_done()


def distillation(args: argparse.Namespace, name: str) -> dict:
    """The TrainConfig fields that make a run distil a slim network from the shipped full one."""
    if args.model != "slim":
        return {}
    return {"model": "slim", "teacher": str(Path(args.teacher_dir) / f"{name}.safetensors"),
            "distill_weight": args.distill_weight}


def merged_rows(out_dir: Path) -> list[dict]:
    rows = {}
    for path in sorted(out_dir.glob("train_log*.json")):     # train_log.json first, workers after
        for row in json.loads(path.read_text()):
            rows[row["style"]] = row
    return list(rows.values())


def pack(out_dir: Path, pack_dir: Path, names: list[str]) -> None:
    """Re-write the tarballs from what is finished now (each atomically)."""
    pack_dir.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(names), STYLES_PER_TAR):
        files = [out_dir / f"{n}.safetensors" for n in names[start:start + STYLES_PER_TAR]]
        files = [f for f in files if f.is_file()]
        if files:
            _write_tar(pack_dir / f"styles_{start // STYLES_PER_TAR + 1}.tar", files, "w")
    extras = [*sorted(out_dir.glob("train*.log")), *sorted((out_dir / "samples").glob("*.png"))]
    rows = merged_rows(out_dir)
    buffer = io.BytesIO(json.dumps(rows, indent=2).encode())
    _write_tar(pack_dir / "logs.tar.gz", [f for f in extras if f.is_file()], "w:gz",
               extra=("train_log.json", buffer))


def _write_tar(path: Path, files: list[Path], mode: str, extra=None) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tarfile.open(tmp, mode) as tar:
        for f in files:
            tar.add(f, arcname=f.name if f.suffix != ".png" else f"samples/{f.name}")
        if extra:
            info = tarfile.TarInfo(extra[0])
            info.size = len(extra[1].getvalue())
            tar.addfile(info, extra[1])
    os.replace(tmp, path)
    if path.stat().st_size > TAR_LIMIT:
        log.warning("%s is %.1f MiB, over the 15 MiB return limit", path, path.stat().st_size / 2**20)


def worker_argv(argv: list[str]) -> list[str]:
    """The parent's flags without --concurrent/--pack-dir (the parent packs)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--concurrent", "--pack-dir"):
            skip = True
        elif not a.startswith(("--concurrent=", "--pack-dir=")):
            out.append(a)
    return out


def run_workers(args: argparse.Namespace, names: list[str], out_dir: Path, pack_dir: Path | None) -> int:
    gpus = max(1, torch.cuda.device_count())
    procs = []
    for k in range(args.concurrent):
        share = names[k::args.concurrent]
        if not share:
            continue
        argv = worker_argv(sys.argv[1:])
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(k % gpus)) if gpus > 1 else dict(os.environ)
        procs.append(subprocess.Popen([sys.executable, __file__, *argv, "--styles", ",".join(share),
                                       "--worker", str(k)], env=env))
    seen: set[str] = set()
    while True:
        running = any(p.poll() is None for p in procs)
        done = {r["style"] for r in merged_rows(out_dir)}
        if pack_dir and done != seen:
            pack(out_dir, pack_dir, names)
            seen = done
        if not running:
            break
        time.sleep(3)
    write_json(out_dir / "train_log.json", merged_rows(out_dir))
    return max(p.returncode for p in procs)


def main(argv=None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.styles.split(",") if n.strip()]
    for n in names:
        get(n)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pack_dir = Path(args.pack_dir) if args.pack_dir else None
    log_file = out_dir / ("train.log" if args.worker is None else f"train.worker{args.worker}.log")
    handlers = [logging.StreamHandler(sys.stdout), logging.FileHandler(log_file)]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", handlers=handlers)
    if args.concurrent > 1 and args.worker is None:
        return run_workers(args, names, out_dir, pack_dir)
    # Packing after each style, so a call cut off at its time limit still returns what finished.
    on_done = (lambda: pack(out_dir, pack_dir, names)) if pack_dir and args.worker is None else None
    train_styles(args, names, out_dir, on_done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
