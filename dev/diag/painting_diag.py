"""Why a style misses issue 44's style ratio: its painting's statistics and where trained outputs fall short.

    python dev/diag/painting_diag.py --metrics ../shared/tools/style_metrics.py --paintings .data/styles \
        --styles dendera,aratea [--outputs DIR] [--photo amber.jpg ...] [--json out/d.json]

All scores are the yardstick's (`style_metrics.py`: Gram matrices at relu1_2…relu4_3, squared
differences summed over entries, images at a longer side of at most 512 px; the painting is the
file the metric reads, so run it on the prepared copy the device trains on). Per style:

flat        share of the painting's pixels (at the metric's size) whose 5×5 luminance std is
            below 3 grey levels: blank paper, flat washes, black sky.
dc          per layer, ‖μμᵀ/C‖ ÷ ‖G‖ for the painting's Gram G and its mean feature μ: how much of
            the target is the average activation (a flat tone) rather than texture.
flat_ratio  the style ratio of an image filled with the painting's mean colour, and of each photo
            half-blended toward it ("wash"), median over the photos: if a wash already scores
            near a trained output, the loss rewards washing out.
layers      with --outputs (the files `dev/eval_styles.py` writes, PHOTO_STYLE_png.png): per layer,
            the output's loss ÷ the photo's, and the layer's share of the output's remaining loss,
            median over the photos: which layer the ratio is still waiting on.

Photos: the shipped assets (styleforge/assets) and any --photo, as dev/eval_styles.py scores
them. A CPU measurement for docs/training.md; not imported by the package.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from json_out import write_json  # noqa: E402

from styleforge.training.catalogue import BY_NAME  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eval_styles import load_metrics  # noqa: E402

LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")
FLAT_STD = 3.0      # grey levels: below JPEG's ringing on an edge, above a flat area's noise


def flat_share(image: torch.Tensor) -> float:
    """Share of pixels whose 5×5 luminance neighbourhood varies by less than FLAT_STD."""
    y = (image[:, 0] * 0.299 + image[:, 1] * 0.587 + image[:, 2] * 0.114)[:, None]
    mean = F.avg_pool2d(y, 5, 1, 2, count_include_pad=False)
    var = F.avg_pool2d(y * y, 5, 1, 2, count_include_pad=False) - mean * mean
    return float((var.clamp_min(0).sqrt() < FLAT_STD).float().mean())


@torch.no_grad()
def dc_shares(sm, feats) -> list[float]:
    shares = []
    for f in feats:
        c = f.shape[1]
        mu = f.mean(dim=(2, 3))[0]
        shares.append(float(torch.outer(mu, mu).div(c).norm() / sm.gram(f)[0].norm()))
    return shares


@torch.no_grad()
def layer_losses(sm, feats, grams) -> list[float]:
    return [float(((sm.gram(f) - g) ** 2).sum()) for f, g in zip(feats, grams)]


@torch.no_grad()
def diagnose(sm, painting_path: Path, photos: list[Path], outputs: Path | None, name: str) -> dict:
    painting = sm.load(painting_path, 512)
    pfeats = sm.feats(painting)
    grams = [sm.gram(f) for f in pfeats]
    mean_colour = painting.mean(dim=(2, 3), keepdim=True)
    flat, wash, per_layer, shares, ratios = [], [], [], [], []
    for photo_path in photos:
        photo = sm.load(photo_path, 512)
        base = layer_losses(sm, sm.feats(photo), grams)
        flat.append(sum(layer_losses(sm, sm.feats(mean_colour.expand_as(photo).contiguous()), grams)) / sum(base))
        wash.append(sum(layer_losses(sm, sm.feats(0.5 * photo + 0.5 * mean_colour), grams)) / sum(base))
        out_path = outputs / f"{photo_path.stem}_{name}_png.png" if outputs else None
        if out_path is not None and out_path.is_file():
            out = sm.load(out_path, 512)
            if out.shape != photo.shape:
                out = F.interpolate(out, size=photo.shape[-2:], mode="bilinear")
            losses = layer_losses(sm, sm.feats(out), grams)
            ratios.append(sum(losses) / sum(base))
            per_layer.append([o / b for o, b in zip(losses, base)])
            shares.append([o / sum(losses) for o in losses])
    row = {"style": name, "painting": str(painting_path), "size": list(painting.shape[-2:][::-1]),
           "flat": flat_share(painting), "dc": dict(zip(LAYERS, dc_shares(sm, pfeats))),
           "mean_colour": [round(float(v), 1) for v in mean_colour.flatten()],
           "flat_ratio": statistics.median(flat), "wash_ratio": statistics.median(wash)}
    if ratios:
        row["output_ratio"] = statistics.median(ratios)
        row["layer_ratio"] = dict(zip(LAYERS, np.median(per_layer, axis=0).tolist()))
        row["layer_share_of_output_loss"] = dict(zip(LAYERS, np.median(shares, axis=0).tolist()))
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--metrics", required=True, help="style_metrics.py (its VGG in ../data/)")
    p.add_argument("--paintings", default=".data/styles", help="the folder of painting files the device trains on")
    p.add_argument("--styles", required=True, help="built-in names, comma-separated")
    p.add_argument("--outputs", default=None, help="PHOTO_STYLE_png.png files from dev/eval_styles.py")
    p.add_argument("--photo", action="append", default=[], help="a held-out photo beside the assets")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    torch.set_grad_enabled(False)
    sm = load_metrics(Path(args.metrics))
    photos = list(default_photos()) + [Path(x) for x in args.photo]
    outputs = Path(args.outputs) if args.outputs else None
    rows = []
    print(f"{'style':20s}{'size':>10s}{'flat':>6s}   dc relu1_2…4_3        flat  wash   output  "
          "out/photo per layer        share of output loss")
    for name in args.styles.split(","):
        row = diagnose(sm, Path(args.paintings) / BY_NAME[name].painting_file, photos, outputs, name)
        rows.append(row)
        line = (f"{name:20s}{'x'.join(map(str, row['size'])):>10s}{row['flat']:6.2f}   "
                + " ".join(f"{v:.2f}" for v in row["dc"].values())
                + f"   {row['flat_ratio']:5.2f} {row['wash_ratio']:5.2f}")
        if "output_ratio" in row:
            line += (f"   {row['output_ratio']:5.3f}   " + " ".join(f"{v:.2f}" for v in row["layer_ratio"].values())
                     + "     " + " ".join(f"{v:.2f}" for v in row["layer_share_of_output_loss"].values()))
        print(line, flush=True)
    print(f"{len(photos)} photos; ratios are medians over them (the metric's sum over Gram entries)")
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
