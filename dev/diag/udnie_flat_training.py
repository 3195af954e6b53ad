"""Does `flat_augment` clear udnie's blotches? The same short CPU fine-tune of a style file with and
without it, scored by the blotch share of `udnie_blotches.py` and the shared yardstick's ratio.

    python dev/diag/udnie_flat_training.py --data ../shared/data --steps 120 --shares 0,0.5 \
        --out out/udnie_flat

Each arm starts from --init (the shipped udnie), fresh Adam, the same seed and batches, udnie's
catalogue weights with the painting and crops at half the recipe's size (128² crops, painting at
256: the recipe's ratio of the two), grid and stability terms off in both arms (CPU time), and
scores the photos at 512 px. A CPU-sized check of the direction, not a recipe: numbers go to
docs/training.md "The blotches".
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "dev" / "diag"))

import torch  # noqa: E402
from udnie_blotches import blotch_mask, load_metrics, load_net  # noqa: E402

from styleforge.models.checkpoint import load_checkpoint  # noqa: E402
from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training import Trainer  # noqa: E402
from styleforge.training.catalogue import get  # noqa: E402
from styleforge.training.data import load_content, load_style_image  # noqa: E402
from styleforge.training.samples import default_photos, network_photo  # noqa: E402


@torch.no_grad()
def score(model, photos, metrics, painting) -> dict:
    model.eval()
    shares, ratios = [], []
    for x in photos:
        out = model(x).clamp(0, 255).round()
        shares.append(float(blotch_mask(out, x).float().mean()))
        if metrics is not None:
            ratios.append(metrics.metrics(x, out, painting)[0])
    return {"blotch_median": round(statistics.median(shares), 4), "blotch": [round(s, 4) for s in shares],
            "style_ratio_median": round(statistics.median(ratios), 3) if ratios else None}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--init", default=str(ROOT / "styleforge" / "styles" / "udnie.safetensors"))
    p.add_argument("--style", default="udnie")
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--max-content", type=int, default=64)
    p.add_argument("--shares", default="0,0.5")
    p.add_argument("--metrics", default="/work/main/.data/tools/style_metrics.py")
    p.add_argument("--out", default="out/udnie_flat")
    args = p.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    data, out = Path(args.data), Path(args.out)
    style = get(args.style)
    vgg = load_vgg16(str(data / "vgg16_relu4_3.fp16.pth"), "cpu", torch.float32)
    content = load_content(data / "content", args.size, 0, args.max_content)
    painting = load_style_image(data / "styles" / style.painting_file, 2 * args.size)
    metrics = load_metrics(args.metrics)
    yardstick = metrics.load(str(data / "styles" / style.painting_file), 512) if metrics else None
    photos = [network_photo(path, 512) for path in default_photos() + [data / "amber.jpg"] if path.is_file()]
    summary = {"init": score(load_net(args.init), photos, metrics, yardstick)}
    print(f"init: {summary['init']}", flush=True)
    for share in (float(s) for s in args.shares.split(",")):
        run = out / f"flat_{share:g}"
        run.mkdir(parents=True, exist_ok=True)
        config = style.config(data / "styles", out=str(run / "style.safetensors"), steps=args.steps,
                              batch_size=args.batch_size, image_size=args.size, style_size=2 * args.size,
                              grid_weight=0.0, stability_weight=0.0, flat_augment=share,
                              content_dir=str(data / "content"), checkpoint_every=0, sample_every=0,
                              log_every=max(1, args.steps // 4),
                              progress=False, overwrite=True, device="cpu", sample_photos=(str(default_photos()[0]),))
        trainer = Trainer(config, vgg=vgg, content=content, painting=painting)
        trainer.model.load_state_dict(load_checkpoint(args.init).state_dict)   # no optimizer state yet
        trainer.run()
        summary[f"{share:g}"] = score(trainer.model, photos, metrics, yardstick)
        print(f"flat_augment {share:g}: {summary[f'{share:g}']}", flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
