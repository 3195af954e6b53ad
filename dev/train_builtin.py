"""Train the built-in styles on the GPU machine: in order in one process, or K processes at once.

Run from the repository root, with the data packed into `.data/` (dev/device/pack_data.sh);
dev/device/train_styles.sh is the command the GPU calls run:

    python dev/train_builtin.py --concurrent 14 --deadline 480 --pack-dir "$OUT"

Every style gets the catalogue's v2 RECIPE (steps, grid penalty, stability term) and its tweaks;
flags given here win. Runs resume: each style checkpoints into runs/<name>/ under --out-dir
(keep it in an ignored folder, e.g. runs/builtin, so it survives between device calls) and the
next call continues from the newest step_*.pt; a style already at its step count is only
re-exported, or left as it is where an earlier call exported it and logged its row. `--deadline
S` stops every worker S seconds after the parent started, leaving --reserve seconds to write the
weights, the int8 file and the samples. After each style its
int8 file (dev/quantize_styles.py, PSNR against the fp16 weights in the metadata) goes to
<out-dir>/int8/.

The VGG, the content set (on the GPU) and, with --compile, the compiled loss graph are loaded
once and reused for every style. Each style is written the moment it finishes — its fp16
safetensors, a sample sheet, its row in `train_log.json` with steps, seconds, images/s, final
losses and the held-out style-loss ratios — because the device call may be cut off. With
--pack-dir the results are re-packed after every style into `styles_K.tar` (seven int8 styles,
~12 MiB each), `logs.tar.gz` (log rows with the loss history, samples) and `curves.png`, to fit
the device's 16-MiB-per-file return rule. `--concurrent K` runs K worker processes (round-robin
over the styles; worker k on GPU k mod the GPU count; several share a GPU) and the parent packs.
`--metrics DIR/tools/style_metrics.py` adds issue 44's yardstick to each style's row, right after
its export: "metric" is {png, jpg: medians of style_ratio, content_dist, palette_dist, grid_score}
over the files the CLI writes for its int8 file on this machine's device (dev/eval_styles.py's
`cli_medians`: each held-out photo at its own size, PNG and JPEG 4:4:4; the asset photos plus each
`--photo`, e.g. amber.jpg), "metric_fp32_512" the older preview (`heldout_medians`: the asset
photos at 512 px, fp32 reference path). The VGG scoring runs on the CPU.
`--style-reduction frobenius` and `--style-weight-scale F` try the other Gram loss on every style
(docs/training.md "The style loss's layer weighting"). `--plan PLAN.json` trains recipe variants
instead of the catalogue's styles (dev/train_plan.py): each under its own name, so variants of one
style do not overwrite each other; `--styles` then picks variants by name.
This is a dev tool: it is not imported by the package. It is longer than the house's 400 lines
because it is one device call's whole driver (train, export, score, pack, workers); the plan
format (train_plan.py) and the scoring (eval_styles.py) live beside it.
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
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from train_plan import Variant, load_plan  # noqa: E402

from styleforge.models.checkpoint import load_checkpoint  # noqa: E402
from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training import Trainer  # noqa: E402
from styleforge.training.catalogue import BUILTIN_STYLES, RECIPE, get  # noqa: E402
from styleforge.training.config import SLIM_INITS, STYLE_REDUCTIONS, TrainConfig  # noqa: E402
from styleforge.training.data import load_content, place  # noqa: E402
from styleforge.training.evaluate import evaluate_style, summarise  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402
from styleforge.training.trainer import step_checkpoints  # noqa: E402

log = logging.getLogger("train_builtin")
STYLES_PER_TAR = 7
TAR_LIMIT = 15 * 2**20


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--styles", default=None,
                   help="comma-separated built-in names (default: all of the catalogue), or with --plan "
                        "variant names (default: all of the plan)")
    p.add_argument("--plan", default=None, metavar="JSON",
                   help="recipe variants to train instead (dev/train_plan.py; e.g. dev/device/plans/round7.json)")
    p.add_argument("--steps", type=int, default=None, help=f"steps per style (default {RECIPE['steps']})")
    p.add_argument("--max-seconds-per-style", type=float, default=None, metavar="S")
    p.add_argument("--deadline", type=float, default=None, metavar="S",
                   help="stop every worker S seconds after the start (the device call's limit, less a margin)")
    p.add_argument("--reserve", type=float, default=45.0, metavar="S",
                   help="seconds kept before the deadline for exporting (default 45)")
    p.add_argument("--stop-at", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--image-size", type=int, default=None)
    p.add_argument("--grid-weight", type=float, default=None)
    p.add_argument("--stability-weight", type=float, default=None)
    p.add_argument("--style-reduction", choices=STYLE_REDUCTIONS, default=None,
                   help="Gram loss per layer, mean or frobenius (default: the catalogue's, mean). A checkpoint "
                        "of the other reduction is refused on resume: switch with a fresh --out-dir")
    p.add_argument("--style-weight-scale", type=float, default=None, metavar="F",
                   help="multiply each style's style_weight (recipe or tweak) by F, e.g. about 1/R with "
                        "--style-reduction frobenius (R per painting: docs/training.md)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--checkpoint-every", type=int, default=500)
    p.add_argument("--warm-dir", default=None, metavar="DIR",
                   help="a style with no checkpoint here starts from DIR/<name>.safetensors (weights and "
                        "step count from its metadata; fresh Adam): a new machine without runs/")
    p.add_argument("--vgg-weights", default=".data/vgg16_relu4_3.fp16.pth")
    p.add_argument("--content-dir", default=".data/content")
    p.add_argument("--paintings-dir", default=".data/styles")
    p.add_argument("--out-dir", default="runs/builtin", help="weights, checkpoints, samples and logs")
    p.add_argument("--pack-dir", default=None, help="where the tarballs go (e.g. $OUT)")
    p.add_argument("--model", choices=("full", "slim"), default="full",
                   help="slim: the half-width network, distilled from --teacher-dir's full one")
    p.add_argument("--teacher-dir", default="styleforge/styles", help="full networks to distil (--model slim)")
    p.add_argument("--distill-weight", type=float, default=1e8, help="(--model slim) weight of the distill term")
    p.add_argument("--slim-init", choices=SLIM_INITS, default="teacher",
                   help="(--model slim) start from the teacher's channels (default) or at random")
    p.add_argument("--concurrent", type=int, default=1, metavar="K", help="K worker processes")
    p.add_argument("--no-eval", dest="evaluate", action="store_false",
                   help="skip the held-out style-loss ratios")
    p.add_argument("--metrics", default=None, metavar="PATH",
                   help="shared/tools/style_metrics.py, or a copy: after each style, its int8 file on the "
                        "held-out photos (512 px, fp32) scored with it; medians in the log row's 'metric'. "
                        "The module loads its VGG from ../data/ beside its folder, so carry a folder laid out "
                        "as DIR/tools/style_metrics.py + DIR/data/vgg16_relu4_3.fp16.pth (e.g. DIR=runs/metrics, "
                        "ignored) and pass DIR/tools/style_metrics.py. Stylizes on --device through the CLI's "
                        "pipeline, scores on the CPU: budget --reserve for it")
    p.add_argument("--metrics-backend", default="auto", choices=("auto", "reference", "fused"),
                   help="the CLI's --backend for --metrics' files (default auto: the CLI's own choice, fused "
                        "on CUDA once `styleforge build` has built the kernels)")
    p.add_argument("--photo", dest="photos", action="append", default=[], metavar="PATH",
                   help="another held-out photo for --metrics (repeatable; never a training photo), e.g. "
                        ".data/amber.jpg as dev/eval_styles.py's yardstick uses")
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


class Job(NamedTuple):
    """One run: a catalogue style with the flags' recipe, or a plan's variant (its own name)."""
    name: str
    style: str
    variant: Variant | None = None


def jobs(args: argparse.Namespace) -> list[Job]:
    """--styles of the catalogue, or --plan's variants (those named in --styles, if given)."""
    if args.plan is None:
        names = args.styles.split(",") if args.styles else [s.name for s in BUILTIN_STYLES]
        found = [Job(n.strip(), n.strip()) for n in names if n.strip()]
        for job in found:
            get(job.style)
        return found
    variants = {v.name: v for v in load_plan(args.plan)}
    names = [n.strip() for n in args.styles.split(",") if n.strip()] if args.styles else list(variants)
    missing = [n for n in names if n not in variants]
    if missing:
        raise KeyError(f"--styles {missing} not in the plan {args.plan}; it has {list(variants)}")
    return [Job(n, variants[n].style, variants[n]) for n in names]


def job_settings(args: argparse.Namespace, job: Job) -> dict:
    """The TrainConfig fields a job sets over the catalogue: the flags, then its variant's."""
    settings = {**overrides(args), **style_weight(args, job.style)}
    if job.variant is not None:
        settings.update(job.variant.settings)
        if job.variant.style_weight_scale is not None:
            own = job.variant.settings.get("style_weight", own_style_weight(job.style))
            settings["style_weight"] = own * job.variant.style_weight_scale
    return settings


def job_style(job: Job):
    """The catalogue entry a job trains: its variant's (which may name another painting), else the style's."""
    return job.variant.catalogue_style() if job.variant is not None else get(job.style)


def warm_file(args: argparse.Namespace, job: Job) -> Path | None:
    if job.variant is not None:
        return job.variant.warm_file()
    return Path(args.warm_dir) / f"{job.name}.safetensors" if args.warm_dir else None


def finished_warm_starts(args: argparse.Namespace, todo: list[Job], out_dir: Path) -> list[str]:
    """Jobs that would only re-export: a warm file already at or past the run's last step, and no
    checkpoint of their own to resume (round 14's udnie pair spent a call so)."""
    from safetensors import safe_open
    found = []
    for job in todo:
        warm = warm_file(args, job)
        if warm is None or not warm.is_file() or step_checkpoints(out_dir / "runs" / job.name):
            continue
        with safe_open(str(warm), "pt") as f:
            reached = int((f.metadata() or {}).get("steps", 0))
        last = job_style(job).config("paintings", **job_settings(args, job)).steps
        if reached >= last:
            found.append(f"{job.name}: {warm} is at step {reached} and the run ends at {last}")
    return found


def overrides(args: argparse.Namespace) -> dict:
    """The recipe fields given on the command line (None: the catalogue's RECIPE and tweaks)."""
    given = {"steps": args.steps, "batch_size": args.batch_size, "image_size": args.image_size,
             "grid_weight": args.grid_weight, "stability_weight": args.stability_weight,
             "style_reduction": args.style_reduction}
    return {k: v for k, v in given.items() if v is not None}


def style_weight(args: argparse.Namespace, name: str) -> dict:
    """--style-weight-scale applied to the style's own weight (its tweak, else the recipe's)."""
    if args.style_weight_scale is None:
        return {}
    return {"style_weight": own_style_weight(name) * args.style_weight_scale}


def own_style_weight(name: str) -> float:
    """The style's style_weight: its tweak, else the recipe's, else TrainConfig's."""
    return {**RECIPE, **get(name).tweaks}.get("style_weight", TrainConfig.style_weight)


def distillation(args: argparse.Namespace, name: str) -> dict:
    """The TrainConfig fields that make a run distil a slim network from the shipped full one."""
    if args.model != "slim":
        return {}
    return {"model": "slim", "teacher": str(Path(args.teacher_dir) / f"{name}.safetensors"),
            "distill_weight": args.distill_weight, "slim_init": args.slim_init}


def budget(args: argparse.Namespace) -> float | None:
    """Seconds this style may train: the per-style cap and what is left before the deadline."""
    limits = [args.max_seconds_per_style] if args.max_seconds_per_style else []
    if args.stop_at is not None:
        limits.append(args.stop_at - time.time() - args.reserve)
    return min(limits) if limits else None


def train_styles(args: argparse.Namespace, todo: list[Job], out_dir: Path, on_done=None) -> None:
    """Train the jobs in order, writing each result as soon as it exists; then call on_done()."""
    import tempfile

    from eval_styles import cli_medians, heldout_medians, load_metrics
    from quantize_styles import photo_tensors, quantize_file
    metrics = load_metrics(Path(args.metrics)) if args.metrics else None    # a bad path fails before training
    photos = default_photos() + [Path(p) for p in args.photos]      # --metrics: the yardstick's photos
    missing = [str(p) for p in photos if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"--photo {missing} not found")
    device = torch.device("cuda" if args.device != "cpu" and torch.cuda.is_available() else "cpu")
    amp = torch.bfloat16 if device.type == "cuda" else torch.float32
    t0 = time.perf_counter()
    sizes = {job_settings(args, job).get("image_size", RECIPE["image_size"]) for job in todo}
    if len(sizes) > 1:
        raise ValueError(f"one worker trains one crop size; these jobs ask for {sorted(sizes)}")
    image_size = sizes.pop() if sizes else RECIPE["image_size"]
    vgg = load_vgg16(args.vgg_weights, device, amp)
    eval_vgg = load_vgg16(args.vgg_weights, device, torch.float32) if args.evaluate else None
    content = place(load_content(args.content_dir, image_size, args.seed), device)
    heldout = photo_tensors(default_photos())
    log.info("loaded VGG and %d photos in %.1f s", len(content), time.perf_counter() - t0)
    rows_path = log_path(out_dir, args.worker)
    rows = json.loads(rows_path.read_text()) if rows_path.is_file() else []
    for job in todo:
        name, style = job.name, job_style(job)
        run_dir = out_dir / "runs" / name
        earlier = step_checkpoints(run_dir)
        seconds = budget(args)
        if seconds is not None and seconds < 10:
            log.info("%s: no time left before the deadline; next call resumes", name)
            continue
        config = style.config(
            args.paintings_dir, content_dir=args.content_dir, out=str(out_dir / f"{name}.safetensors"),
            vgg_weights=args.vgg_weights, seed=args.seed, compile=args.compile,
            max_seconds=seconds, checkpoint_every=args.checkpoint_every, sample_every=0,
            checkpoint_dir=str(run_dir), keep_checkpoints=1, log_every=100,
            progress=False, device=device.type, resume=str(earlier[-1][1]) if earlier else None,
            **job_settings(args, job), **distillation(args, job.style))
        if job.variant is not None:     # the exported file says which recipe it is
            config.metadata = {**config.metadata, "variant": name, "variant_plan": job.variant.describe()}
        started = time.perf_counter()
        trainer = Trainer(config, vgg=vgg, content=content)
        warm = warm_file(args, job)
        if not earlier and warm is not None and warm.is_file():
            checkpoint = load_checkpoint(warm)
            trainer.model.load_state_dict(checkpoint.state_dict)
            # Batches are a function of the step number, so the run goes on where it was.
            trainer.step_count = int(checkpoint.metadata.get("steps", 0))
            log.info("%s: warm start from %s at step %d", name, warm, trainer.step_count)
        if trainer.step_count >= trainer.total_steps:
            if exported(out_dir, name, trainer.step_count):
                # a re-export would log 0 s over the real row and rewrite the file (round 15's fourth call)
                log.info("%s: finished at step %d in an earlier call; its file and row kept", name,
                         trainer.step_count)
                continue
            log.info("%s: already at step %d; re-exporting", name, trainer.step_count)
        result = trainer.run()
        int8 = out_dir / "int8" / f"{name}.safetensors"
        int8.parent.mkdir(exist_ok=True)
        psnr = quantize_file(result.out, int8, heldout, device.type)
        sheet = max((out_dir / "runs" / name / "samples").glob("step_*.png"))
        (out_dir / "samples").mkdir(exist_ok=True)
        shutil.copyfile(sheet, out_dir / "samples" / f"{name}.png")
        row = {"name": name, "style": style.name, "painting": style.painting_file, "steps": result.steps,
               "seconds": round(result.seconds, 2), "wall_seconds": round(time.perf_counter() - started, 2),
               "images_per_s": round(result.images_per_s, 1), "final_losses": result.losses,
               "target_steps": trainer.total_steps, "settings": config.settings(),
               "stopped_early": result.stopped_early, "bytes": int8.stat().st_size,
               "int8_psnr_db": psnr, "sha256": sha256(int8), "device": str(torch.cuda.get_device_name(device)
                                                           if device.type == "cuda" else "cpu"),
               "history": result.history, "finished_at": round(time.time(), 1)}
        if eval_vgg is not None:
            scores = evaluate_style(name, result.out, Path(args.paintings_dir) / style.painting_file,
                                    default_photos(), eval_vgg, device=device.type)
            row["heldout"] = summarise(scores)[0]
            if args.model == "slim":     # the teacher's numbers on the same photos, for the comparison
                teacher = evaluate_style(name, Path(args.teacher_dir) / f"{style.name}.safetensors",
                                         Path(args.paintings_dir) / style.painting_file,
                                         default_photos(), eval_vgg, device=device.type)
                row["teacher_heldout"] = summarise(teacher)[0]
        rows = [r for r in rows if row_name(r) != name] + [row]
        write_json(rows_path, rows)     # the weights are packed now, whatever the scoring below does
        if metrics is not None:     # issue 44's yardstick on what ships: the int8 file, through the CLI
            painting = Path(args.paintings_dir) / style.painting_file
            try:
                with tempfile.TemporaryDirectory(prefix=f"metric_{name}_") as work:
                    row["metric"] = cli_medians(metrics, int8, painting, photos, Path(work), device.type,
                                                backend=args.metrics_backend)
                row["metric_fp32_512"] = heldout_medians(metrics, int8, painting, default_photos(), device.type)
            except Exception as exc:    # a scoring failure must not lose the trained weights' row
                log.exception("%s: --metrics failed", name)
                row["metric_error"] = f"{type(exc).__name__}: {exc}"
            write_json(rows_path, rows)
        log.info("%s: %d steps in %.1f s, %.0f img/s, losses %s%s%s", name, result.steps, result.seconds,
                 result.images_per_s, {k: f"{v:.3g}" for k, v in result.losses.items()},
                 f", held-out ratio {row['heldout']['ratio']:.3f}" if "heldout" in row else "",
                 "".join(f", {fmt} metric " + " ".join(f"{k} {v:.3f}" for k, v in m.items())
                         for fmt, m in row.get("metric", {}).items()))
        if on_done is not None:
            on_done()


def row_name(row: dict) -> str:
    return row.get("name", row["style"])        # rows from before plans have no name: the style's


def row_age(row: dict) -> tuple[float, int]:
    """Newer rows win: a resumed call's workers take variants in another order, so the worker files
    of an earlier call hold stale rows under the same names. Rows from before `finished_at` go by steps."""
    return row.get("finished_at", 0.0), row.get("steps", 0)


def exported(out_dir: Path, name: str, steps: int) -> bool:
    """Whether an earlier call already wrote `name`'s int8 file and logged its row at `steps`."""
    return (out_dir / "int8" / f"{name}.safetensors").is_file() and any(
        row_name(r) == name and int(r["steps"]) >= steps for r in merged_rows(out_dir))


def merged_rows(out_dir: Path) -> list[dict]:
    rows: dict[str, dict] = {}
    for path in sorted(out_dir.glob("train_log*.json")):
        for row in json.loads(path.read_text()):
            name = row_name(row)
            if name not in rows or row_age(row) >= row_age(rows[name]):
                rows[name] = row
    return list(rows.values())


def pack(out_dir: Path, pack_dir: Path, names: list[str]) -> None:
    """Re-write the tarballs from what is finished now (each atomically)."""
    pack_dir.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(names), STYLES_PER_TAR):
        files = [out_dir / "int8" / f"{n}.safetensors" for n in names[start:start + STYLES_PER_TAR]]
        files = [f for f in files if f.is_file()]
        if files:
            _write_tar(pack_dir / f"styles_{start // STYLES_PER_TAR + 1}.tar", files, "w")
    extras = [*sorted(out_dir.glob("train*.log")), *sorted((out_dir / "samples").glob("*.png"))]
    rows = merged_rows(out_dir)
    buffer = io.BytesIO(json.dumps(rows, indent=2).encode())
    _write_tar(pack_dir / "logs.tar.gz", [f for f in extras if f.is_file()], "w:gz",
               extra=("train_log.json", buffer))


def draw_curves(rows: list[dict], path: Path) -> None:
    """One panel per style: the weighted loss terms against the step (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = 4
    nrows = (len(rows) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3 * nrows), squeeze=False)
    for ax, row in zip(axes.flat, rows):
        steps = [h["step"] for h in row["history"]]
        for term in ("content", "style", "grid", "stability"):
            values = [h.get(term, 0.0) for h in row["history"]]
            if any(v > 0 for v in values):
                ax.plot(steps, values, label=term)
        ax.set_yscale("log")
        ax.set_title(f"{row_name(row)} ({row['steps']}/{row.get('target_steps', '?')})", fontsize=9)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def draw_sheet(out_dir: Path, path: Path, device: str) -> None:
    """`styleforge styles --sheet` over the int8 files just trained (the registry pointed at them)."""
    env = dict(os.environ, STYLEFORGE_STYLES_DIR=str((out_dir / "int8").resolve()))
    subprocess.run([sys.executable, "-m", "styleforge", "styles", "--sheet", str(path), "--cell", "256",
                    "--device", device], env=env, check=False)


def finish(out_dir: Path, pack_dir: Path | None, names: list[str], device: str) -> None:
    """After the last worker: the merged log, then (with --pack-dir) tarballs, curves and sheet."""
    rows = merged_rows(out_dir)
    write_json(out_dir / "train_log.json", rows)
    if pack_dir is None or not rows:
        return
    pack(out_dir, pack_dir, names)
    draw_curves(rows, pack_dir / "curves.png")
    draw_sheet(out_dir, pack_dir / "sheet.jpg", device)


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
    """The parent's flags without --concurrent/--pack-dir/--styles/--deadline (the parent packs,
    shares the styles out and passes the deadline as an absolute --stop-at)."""
    drop = ("--concurrent", "--pack-dir", "--styles", "--deadline")
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in drop:
            skip = True
        elif not a.startswith(tuple(f"{d}=" for d in drop)):
            out.append(a)
    return out


def worker_env(k: int, gpus: int, workers: int) -> dict:
    """Worker k's environment: its GPU (round-robin over those visible) and a share of the CPU
    threads, so that K workers scoring --metrics at once do not each start one per core."""
    env = dict(os.environ)
    if gpus > 1:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
        env["CUDA_VISIBLE_DEVICES"] = visible[k % gpus] if len(visible) == gpus else str(k % gpus)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
    return env


def run_workers(args: argparse.Namespace, names: list[str], out_dir: Path, pack_dir: Path | None) -> int:
    gpus = max(1, torch.cuda.device_count())
    workers = min(args.concurrent, len(names))
    procs = []
    for k in range(workers):
        share = names[k::args.concurrent]
        if not share:
            continue
        argv = worker_argv(sys.argv[1:])
        env = worker_env(k, gpus, workers)
        stop = ["--stop-at", str(args.stop_at)] if args.stop_at is not None else []
        procs.append(subprocess.Popen([sys.executable, __file__, *argv, "--styles", ",".join(share),
                                       "--worker", str(k), *stop], env=env))
    seen: set[tuple] = set()
    while True:
        running = any(p.poll() is None for p in procs)
        done = {(row_name(r), "metric" in r) for r in merged_rows(out_dir)}     # a row, then its metric
        if pack_dir and done != seen:
            pack(out_dir, pack_dir, names)
            seen = done
        if not running:
            break
        time.sleep(3)
    finish(out_dir, pack_dir, names, args.device)
    return max(p.returncode for p in procs)


def main(argv=None) -> int:
    args = parse_args(argv)
    todo = jobs(args)
    names = [job.name for job in todo]
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pack_dir = Path(args.pack_dir) if args.pack_dir else None
    log_file = out_dir / ("train.log" if args.worker is None else f"train.worker{args.worker}.log")
    handlers = [logging.StreamHandler(sys.stdout), logging.FileHandler(log_file)]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", handlers=handlers)
    if args.stop_at is None and args.deadline is not None:
        args.stop_at = time.time() + args.deadline
    finished = finished_warm_starts(args, todo, out_dir) if args.worker is None else []
    if finished:      # before any GPU time: a plan's `steps` (or --steps) must go past the warm file
        raise ValueError("nothing to train: " + "; ".join(finished) + " (set steps past it)")
    if args.concurrent > 1 and args.worker is None:
        return run_workers(args, names, out_dir, pack_dir)
    # Packing after each style, so a call cut off at its time limit still returns what finished.
    on_done = (lambda: pack(out_dir, pack_dir, names)) if pack_dir and args.worker is None else None
    train_styles(args, todo, out_dir, on_done)
    if args.worker is None:
        finish(out_dir, pack_dir, names, args.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
