"""How near its teacher a slim network starts: random init, channels sliced, channels sliced and refit
(training/slim_init.py), and optionally after a short CPU distillation from random and from the
teacher's channels. Scores on the held-out asset photos: PSNR of the slim output against the
teacher's (clamped 0–255, each photo cropped to a multiple of 4) and training/evaluate.py's style
ratio (geometric mean over the photos; the teacher's row for comparison). The calibration photos
are training photos (the content folder), never the asset photos.

    python dev/slim_init_eval.py --styles candy,mosaic,udnie --train-steps 100 > out.txt

This is a dev tool: it is not imported by the package.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from styleforge.models.checkpoint import build_model, load_checkpoint, save_checkpoint  # noqa: E402
from styleforge.models.registry import resolve_style  # noqa: E402
from styleforge.models.transformer_net import SLIM_WIDTH  # noqa: E402
from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training import Trainer  # noqa: E402
from styleforge.training.catalogue import get  # noqa: E402
from styleforge.training.data import load_content  # noqa: E402
from styleforge.training.evaluate import evaluate_style, summarise  # noqa: E402
from styleforge.training.samples import default_photos, load_photos  # noqa: E402
from styleforge.training.slim_init import calibration_photos, slim_from_full  # noqa: E402
from styleforge.training.trainer import fresh_model  # noqa: E402

DATA = Path("/work/shared/data")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--styles", default="candy,mosaic,udnie")
    p.add_argument("--content-dir", default=str(DATA / "content"))
    p.add_argument("--paintings-dir", default=str(DATA / "styles"))
    p.add_argument("--vgg-weights", default=str(DATA / "vgg16_relu4_3.fp16.pth"))
    p.add_argument("--calibration-size", type=int, default=256, help="side of the calibration crops")
    p.add_argument("--train-steps", type=int, default=0, help="short distillation per init (0 = none)")
    p.add_argument("--train-size", type=int, default=128)
    p.add_argument("--train-batch", type=int, default=2)
    p.add_argument("--train-photos", type=int, default=64, help="first N content photos for training")
    p.add_argument("--distill-weight", type=float, default=1e8)
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args()


def psnr(outputs: list[torch.Tensor], references: list[torch.Tensor]) -> float:
    mse = sum(float((o.clamp(0, 255) - r.clamp(0, 255)).pow(2).mean()) for o, r in zip(outputs, references))
    return 10 * math.log10(255 ** 2 / (mse / len(outputs)))


@torch.no_grad()
def outputs(model, photos: list[torch.Tensor]) -> list[torch.Tensor]:
    model.eval()
    return [model(p[..., : p.shape[-2] // 4 * 4, : p.shape[-1] // 4 * 4]) for p in photos]


def score(name, weights: Path, painting: Path, vgg, style_size, photos, reference) -> dict:
    model = build_model(load_checkpoint(weights)).float()
    ratio = summarise(evaluate_style(name, weights, painting, default_photos(), vgg, "cpu", style_size))[0]["ratio"]
    return {"psnr_db": round(psnr(outputs(model, photos), reference), 2), "ratio": round(ratio, 4)}


def main() -> int:
    args = parse_args()
    torch.manual_seed(args.seed)
    vgg = load_vgg16(args.vgg_weights, torch.device("cpu"), torch.float32)
    photos = load_photos(default_photos())
    calibration = calibration_photos(load_content(args.content_dir, args.calibration_size, args.seed, 64))
    train_content = (load_content(args.content_dir, args.train_size, args.seed, args.train_photos)
                     if args.train_steps else None)
    tmp = Path(tempfile.mkdtemp(prefix="slim_init_"))
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, calibration {len(calibration)} "
          f"photos at {args.calibration_size} px; held-out: {', '.join(p.name for p in default_photos())}")
    for name in [n.strip() for n in args.styles.split(",") if n.strip()]:
        style = get(name)
        teacher_path = resolve_style(name)
        checkpoint = load_checkpoint(teacher_path)
        style_size = checkpoint.training_settings().get("style_size", 512)
        painting = Path(args.paintings_dir) / style.painting_file
        teacher = build_model(checkpoint).float().eval()
        reference = outputs(teacher, photos)
        rows = {"teacher": {"ratio": round(summarise(evaluate_style(
            name, teacher_path, painting, default_photos(), vgg, "cpu", style_size))[0]["ratio"], 4)}}
        inits = {"random": lambda: fresh_model(args.seed, SLIM_WIDTH),
                 "sliced": lambda: slim_from_full(teacher, calibration, refit_convs=False),
                 "sliced+refit": lambda: slim_from_full(teacher, calibration)}
        for label, make in inits.items():
            start = time.perf_counter()
            model = make()
            seconds = time.perf_counter() - start
            path = save_checkpoint(tmp / f"{name}_{label}.safetensors", model.state_dict(), {"style": name},
                                   dtype=torch.float32)
            rows[label] = {**score(name, path, painting, vgg, style_size, photos, reference),
                           "init_s": round(seconds, 1)}
        for init in ("random", "teacher") if args.train_steps else ():
            config = style.config(args.paintings_dir, content_dir=args.content_dir,
                                  out=str(tmp / f"{name}_trained_{init}.safetensors"), vgg_weights=args.vgg_weights,
                                  steps=args.train_steps, batch_size=args.train_batch, image_size=args.train_size,
                                  model="slim", teacher=str(teacher_path), distill_weight=args.distill_weight,
                                  slim_init=init, seed=args.seed, device="cpu", progress=False,
                                  checkpoint_every=0, sample_every=0, log_every=max(1, args.train_steps // 4),
                                  overwrite=True)
            result = Trainer(config, vgg=vgg, content=train_content).run()
            rows[f"{args.train_steps} steps from {init}"] = {
                **score(name, result.out, painting, vgg, style_size, photos, reference),
                "train_s": round(result.seconds, 1),
                "distill": [round(h["distill"], 5) for h in result.history]}
        for label, row in rows.items():
            print(json.dumps({"style": name, "slim": label, **row}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
