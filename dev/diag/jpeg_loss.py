"""What the CLI's JPEG (4:4:4, q95) removes from a style's outputs that the style ratio cares about.

    python dev/diag/jpeg_loss.py --metrics ../shared/tools/style_metrics.py \
        --style W.safetensors:PAINTING.jpg [--style ...] [--photo amber.jpg] [--json out/j.json]

Per style, on the files `dev/eval_styles.py` scores (the CLI's pipeline, PNG and JPEG 4:4:4), per
held-out photo, medians printed:

ratio       the yardstick's style ratio of the PNG, the JPEG and `training.jpeg.jpeg_proxy(PNG)`
            (does the training proxy reproduce what the JPEG costs?).
layers      per Gram layer (relu1_2…relu4_3), that layer's share of the ratio: its summed squared
            Gram difference ÷ the photo's whole loss, PNG → JPEG: which layer's rise makes the gap.
lost        the PNG − JPEG difference in JFIF YCbCr at full size: RMS per plane (grey levels), and
            its energy per 8×8 DCT band (u+v ≤ 3 low, 4–7 mid, ≥ 8 high, blocks on the JPEG grid)
            as a share of the PNG's own AC energy in that band (`lost_*`), and where the lost AC
            energy sits (`where_*`, summing to 1); `sub_step` the share of the PNG's high-band AC
            energy in coefficients under half a q95 step (what quantises to 0); `abs_y` the share
            of pixels whose luminance moved by ≤ 1, ≤ 2 and > 4 grey levels.

A CPU measurement for docs/training.md ("Round 7: the JPEG gap"); not imported by the package.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from eval_styles import load_metrics, write_outputs  # noqa: E402
from json_out import write_json  # noqa: E402
from PIL import Image  # noqa: E402

from styleforge.training.jpeg import TO_YCBCR, block_dct, jpeg_proxy, quant_tables  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402

LAYERS = ("relu1_2", "relu2_2", "relu3_3", "relu4_3")
BANDS = {"low": (0, 3), "mid": (4, 7), "high": (8, 14)}


def rgb(path: Path) -> torch.Tensor:
    return torch.from_numpy(np.asarray(Image.open(path).convert("RGB")).copy()).permute(2, 0, 1).float()[None]


def layer_shares(metrics, photo: Path, image: Path, painting: Path) -> list[float]:
    """Per layer, Σ(G_out − G_paint)² ÷ the photo's whole loss: these sum to the style ratio."""
    p, o = metrics.load(photo, 512), metrics.load(image, 512)
    if o.shape != p.shape:
        o = torch.nn.functional.interpolate(o, size=p.shape[-2:], mode="bilinear")
    targets = [metrics.gram(f) for f in metrics.feats(metrics.load(painting, 512))]
    per = lambda fs: [((metrics.gram(f) - t) ** 2).sum().item() for f, t in zip(fs, targets)]  # noqa: E731
    base = sum(per(metrics.feats(p)))
    return [v / base for v in per(metrics.feats(o))]


def spectrum(png: torch.Tensor, jpg: torch.Tensor) -> dict:
    h, w = (s - s % 8 for s in png.shape[-2:])
    ycc = lambda x: torch.einsum("ij,bjhw->bihw", TO_YCBCR, x[..., :h, :w])  # noqa: E731
    d, own = block_dct(ycc(png - jpg)), block_dct(ycc(png))                  # (1, 3, h/8, w/8, 8, 8)
    band = torch.arange(8)[:, None] + torch.arange(8)[None, :]
    out = {"rms": [ycc(png - jpg)[0, c].pow(2).mean().sqrt().item() for c in range(3)]}
    lost_ac = d.pow(2)[..., band > 0].sum()
    for name, (lo, hi) in BANDS.items():
        mask = (band >= lo) & (band <= hi) & (band > 0)
        out[f"lost_{name}"] = (d.pow(2)[..., mask].sum() / own.pow(2)[..., mask].sum()).item()
        out[f"where_{name}"] = (d.pow(2)[..., mask].sum() / lost_ac).item()
    moved = ycc(png - jpg)[0, 0].abs()
    out["abs_y"] = [(moved <= 1).float().mean().item(), (moved <= 2).float().mean().item(),
                    (moved > 4).float().mean().item()]
    high = (band >= BANDS["high"][0])
    steps = quant_tables(95).view(1, 3, 1, 1, 8, 8)
    under = (own.abs() < steps / 2) & high
    out["sub_step"] = (own.pow(2)[under].sum() / own.pow(2)[..., high].sum()).item()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--metrics", default="../shared/tools/style_metrics.py")
    p.add_argument("--style", action="append", required=True, metavar="WEIGHTS:PAINTING")
    p.add_argument("--photo", dest="photos", action="append", default=[])
    p.add_argument("--json")
    args = p.parse_args(argv)
    torch.set_grad_enabled(False)
    metrics = load_metrics(Path(args.metrics))
    photos = default_photos() + [Path(x) for x in args.photos]
    report = {}
    with tempfile.TemporaryDirectory(prefix="jpeg_loss_") as work:
        work = Path(work)
        for spec in args.style:
            weights, painting = (Path(x) for x in spec.split(":"))
            files = write_outputs(weights, photos, work, "cpu", {"png": "444", "jpg": "444"})
            rows = []
            for photo in photos:
                png, jpg = files[(photo, "png")], files[(photo, "jpg")]
                proxy = work / f"{photo.stem}_{weights.stem}_proxy.png"
                out = jpeg_proxy(rgb(png)).round()[0].permute(1, 2, 0).to(torch.uint8).numpy()
                Image.fromarray(out).save(proxy)
                shares = {k: layer_shares(metrics, photo, f, painting)
                          for k, f in (("png", png), ("jpg", jpg), ("proxy", proxy))}
                rows.append({"photo": photo.name, **{f"ratio_{k}": sum(v) for k, v in shares.items()},
                             "layers_png": shares["png"], "layers_jpg": shares["jpg"],
                             **spectrum(rgb(png), rgb(jpg))})
            med = lambda f: statistics.median(f(r) for r in rows)  # noqa: E731
            summary = {k: med(lambda r, k=k: r[k]) for k in ("ratio_png", "ratio_jpg", "ratio_proxy",
                                                              "lost_low", "lost_mid", "lost_high", "sub_step",
                                                              "where_low", "where_mid", "where_high")}
            summary["layers_png"] = [med(lambda r, i=i: r["layers_png"][i]) for i in range(4)]
            summary["layers_jpg"] = [med(lambda r, i=i: r["layers_jpg"][i]) for i in range(4)]
            summary["rms_ycbcr"] = [med(lambda r, i=i: r["rms"][i]) for i in range(3)]
            summary["abs_y"] = [med(lambda r, i=i: r["abs_y"][i]) for i in range(3)]
            report[weights.stem] = {"summary": summary, "rows": rows}
            s = summary
            print(f"{weights.stem}: ratio png {s['ratio_png']:.3f} jpg {s['ratio_jpg']:.3f} "
                  f"proxy {s['ratio_proxy']:.3f}")
            print("  layers png " + " ".join(f"{v:.4f}" for v in s["layers_png"])
                  + " | jpg " + " ".join(f"{v:.4f}" for v in s["layers_jpg"]))
            print("  lost rms Y/Cb/Cr " + " ".join(f"{v:.2f}" for v in s["rms_ycbcr"])
                  + f"  share of AC energy lost low {s['lost_low']:.4f} mid {s['lost_mid']:.4f} "
                  f"high {s['lost_high']:.4f}  high-band energy under half a step {s['sub_step']:.3f}")
            print(f"  lost AC energy in low/mid/high {s['where_low']:.3f} {s['where_mid']:.3f} "
                  f"{s['where_high']:.3f}  |dY| <=1 {s['abs_y'][0]:.3f} <=2 {s['abs_y'][1]:.3f} "
                  f">4 {s['abs_y'][2]:.4f}", flush=True)
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
