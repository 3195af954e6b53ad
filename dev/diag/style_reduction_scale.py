"""How much bigger the "frobenius" style loss is than the "mean" one, per painting, at the start.

    python dev/diag/style_reduction_scale.py --data ../shared/data --photos 16 [--json out/r.json]

For each built-in style whose painting is in DATA/styles/ (longer side --style-size, 512 by
default; 'recipe' takes each style's own, e.g. candy's 384), the first --photos training photos
of DATA/content/ (256² crops, as training sees them) are scored against the painting with
the style loss in both reductions (per layer as `losses.style_loss`; the photos' Grams computed
once), on the VGG the trainer loads (fp32, CPU).
R = mean over photos of the frobenius loss ÷ mean over photos of the mean loss: the factor by which
the weighted style term grows at the start of training when only the reduction changes, so
style_weight / R keeps today's starting magnitude. It also prints each layer's share of the
photos' loss in both reductions (which layer the loss, and the issue's style ratio, listen to).
The photo stands in for the untrained network's output. A CPU measurement for docs/training.md;
not imported by the package.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from json_out import write_json  # noqa: E402

from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training.catalogue import BUILTIN_STYLES  # noqa: E402
from styleforge.training.data import load_content, load_style_image  # noqa: E402
from styleforge.training.losses import STYLE_LAYERS, gram, style_targets  # noqa: E402

DEFAULT_STYLES = "the_scream,udnie,candy,mosaic"


@torch.no_grad()
def photo_grams(vgg, photos: torch.Tensor, batch: int = 8) -> list[torch.Tensor]:
    """Per style layer, the photos' (N, C, C) Grams: computed once, scored against every painting."""
    parts = [[gram(getattr(vgg(photos[i:i + batch].float()), n)) for n in STYLE_LAYERS]
             for i in range(0, len(photos), batch)]
    return [torch.cat(layer) for layer in zip(*parts)]


@torch.no_grad()
def measure(vgg, grams: list[torch.Tensor], painting: torch.Tensor) -> dict:
    """R and the layer shares; per layer the losses are `losses.style_loss`'s two reductions."""
    targets = style_targets(vgg, painting)
    layers = torch.stack([(g - t).pow(2).mean(dim=(1, 2)) for g, t in zip(grams, targets)], dim=1)  # (N, 4)
    factors = torch.tensor([(t.shape[-1] / targets[0].shape[-1]) ** 2 for t in targets])     # 1, 4, 16, 64
    mean, frob = layers.sum(1), (layers * factors).sum(1)
    layer_mean = layers.mean(0)
    return {"R": float(frob.mean() / mean.mean()),
            "per_photo_R": {"min": float((frob / mean).min()), "median": float((frob / mean).median()),
                            "max": float((frob / mean).max())},
            "mean_loss": float(mean.mean()), "frobenius_loss": float(frob.mean()),
            "share_mean": dict(zip(STYLE_LAYERS, (layer_mean / layer_mean.sum()).tolist())),
            "share_frobenius": dict(zip(STYLE_LAYERS, (layer_mean * factors / (layer_mean * factors).sum()).tolist()))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="../shared/data", help="vgg16_relu4_3.fp16.pth, content/, styles/")
    p.add_argument("--styles", default=DEFAULT_STYLES, help=f"built-in names (default {DEFAULT_STYLES}); 'all'")
    p.add_argument("--photos", type=int, default=16, help="first N training photos (sorted by name)")
    p.add_argument("--image-size", type=int, default=256)
    p.add_argument("--style-size", default="512", help="the painting's longer side, or 'recipe': each style's own")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    data = Path(args.data)
    vgg = load_vgg16(data / "vgg16_relu4_3.fp16.pth", "cpu", torch.float32)
    photos = load_content(data / "content", args.image_size, seed=42, limit=args.photos)
    grams = photo_grams(vgg, photos)
    wanted = [s for s in BUILTIN_STYLES if args.styles == "all" or s.name in args.styles.split(",")]
    rows = []
    print(f"{'style':16s}{'size':>5s}{'R':>8s}{'R per photo':>20s}{'style_weight':>14s}{'÷ R':>10s}"
          "   share of the photos' loss relu1_2/2_2/3_3/4_3: mean | frobenius")
    for style in wanted:
        config = style.config(data / "styles")
        if not Path(config.style_image).is_file():
            continue
        size = config.style_size if args.style_size == "recipe" else int(args.style_size)
        row = {"style": style.name, "painting": style.painting_file, "style_size": size, "photos": len(photos),
               "style_weight_mean": config.style_weight,
               **measure(vgg, grams, load_style_image(config.style_image, size))}
        row["style_weight_frobenius"] = config.style_weight / row["R"]
        rows.append(row)
        spread = row["per_photo_R"]
        shares = " ".join(f"{v:.2f}" for v in row["share_mean"].values())
        fshares = " ".join(f"{v:.2f}" for v in row["share_frobenius"].values())
        print(f"{style.name:16s}{size:5d}{row['R']:8.2f}{spread['min']:9.2f}–{spread['max']:<10.2f}"
              f"{config.style_weight:14.3g}{row['style_weight_frobenius']:10.3g}   {shares} | {fshares}")
    print(f"{len(photos)} training photos at {args.image_size}²")
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
