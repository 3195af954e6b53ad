"""Does the grid penalty remove the 4-px grid? The same short training with and without it.

    python dev/diag/grid_training.py --data ../shared/data --steps 300 --size 128 \
        --grid-weights 0,3e9 --out out/grid_training

With --init it fine-tunes given weights instead (a shipped style, whose grid is already
there: the cheap check on a CPU). For each grid weight (one run each, same seed, same batches) it trains a style from
scratch on
`--max-content` training photos at `--size`², then stylizes the held-out asset photos at 256 px
and prints grid_score (median over photos), the Gram style-loss ratio and the relu2_2 content
change (training/evaluate.py). Writes the outputs and a JSON summary under --out. A CPU-sized
check of the idea, not a training recipe: the numbers go to docs/training.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from styleforge.io.image import tensor_to_pil  # noqa: E402
from styleforge.models.checkpoint import load_checkpoint  # noqa: E402
from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training import Trainer  # noqa: E402
from styleforge.training.config import TrainConfig  # noqa: E402
from styleforge.training.data import load_content, load_style_image  # noqa: E402
from styleforge.training.grid import grid_score_image  # noqa: E402
from styleforge.training.losses import CONTENT_LAYER, style_distance, style_targets  # noqa: E402
from styleforge.training.samples import default_photos, network_photo  # noqa: E402


@torch.no_grad()
def score(model, vgg, painting, photos, out_dir: Path) -> dict:
    targets = style_targets(vgg, painting)
    grids, ratios, changes = [], [], []
    model.eval()
    for path in photos:
        photo = network_photo(path, 256)
        out = model(photo).clamp(0, 255).round()
        image = tensor_to_pil(out)
        image.save(out_dir / f"{path.stem}.png")
        grids.append(grid_score_image(image))
        ratios.append(float(style_distance(vgg, out, targets) / style_distance(vgg, photo, targets)))
        fo, fp = getattr(vgg(out), CONTENT_LAYER), getattr(vgg(photo), CONTENT_LAYER)
        changes.append(float((fo - fp).pow(2).sum() / fp.pow(2).sum()))
    return {"grid_score": statistics.median(grids), "grid_scores": grids,
            "style_ratio": statistics.median(ratios), "content_change": statistics.median(changes)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="data", help="folder with vgg16_relu4_3.fp16.pth, content/, styles/")
    p.add_argument("--painting", default="candy.jpg")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--max-content", type=int, default=96)
    p.add_argument("--style-size", type=int, default=256)
    p.add_argument("--grid-weights", default="0,3e9")
    p.add_argument("--init", default=None,
                   help="start from these weights (e.g. a shipped style) instead of random init")
    p.add_argument("--extra", default="", help="more TrainConfig fields, e.g. tv_weight=1e2")
    p.add_argument("--out", default="out/grid_training")
    args = p.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    data, out = Path(args.data), Path(args.out)
    vgg = load_vgg16(str(data / "vgg16_relu4_3.fp16.pth"), "cpu", torch.float32)
    content = load_content(data / "content", args.size, 0, args.max_content)
    painting = load_style_image(data / "styles" / args.painting, args.style_size)
    extra = {k: float(v) for k, v in (kv.split("=") for kv in args.extra.split(",") if kv)}
    photos = default_photos()
    summary = {}
    for weight in (float(w) for w in args.grid_weights.split(",")):
        run = out / f"grid_{weight:g}"
        run.mkdir(parents=True, exist_ok=True)
        config = TrainConfig(style_image=str(data / "styles" / args.painting), content_dir=str(data / "content"),
                             out=str(run / "style.safetensors"), steps=args.steps, batch_size=args.batch_size,
                             image_size=args.size, style_size=args.style_size, grid_weight=weight,
                             checkpoint_every=0, sample_every=0, log_every=50, progress=False,
                             overwrite=True, device="cpu", sample_photos=tuple(map(str, photos[:1])), **extra)
        started = time.perf_counter()
        trainer = Trainer(config, vgg=vgg, content=content, painting=painting)
        if args.init:   # fine-tuning: the optimizer has no state yet, so replacing weights is enough
            trainer.model.load_state_dict(load_checkpoint(args.init).state_dict)
        trainer.run()
        summary[f"{weight:g}"] = {"seconds": round(time.perf_counter() - started, 1),
                                  "final": trainer.history[-1],
                                  **score(trainer.model, vgg, painting, photos, run)}
        row = summary[f"{weight:g}"]
        print(f"grid_weight {weight:g}: grid_score {row['grid_score']:.1f} {row['grid_scores']}, "
              f"style ratio {row['style_ratio']:.3f}, content change {row['content_change']:.3f}, "
              f"{row['seconds']:.0f} s", flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
