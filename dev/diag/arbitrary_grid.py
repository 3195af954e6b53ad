"""Where the arbitrary model's 4-px grid comes from: grid scores stage by stage (CPU, fp32).

Runs the shipped (or given) weights on a smooth input and a photo, one painting, and prints the
`training.grid.grid_score` of: the input; the output after 1 and 2 passes; the decoder's
output on the photo's own features (no transfer: is it the decoder?); the same with the
decoder's and the merge's nearest ×2 upsampling swapped for bilinear at inference; the
per-channel median score of every decoder activation at full size; the encoder's relu1_1 and
relu2_1 of the input and of the one-pass output (what pass 2 sees); and stroke-scale auto on a
2× larger input. A development probe: not imported by the package.
Usage: python dev/diag/arbitrary_grid.py [--weights FILE] [--size 256] [--painting PATH]
"""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from styleforge.engine.stroke import downscale, upscale_styled
from styleforge.models.arbitrary import load_arbitrary
from styleforge.models.arbitrary.decoder import Upsample
from styleforge.training.grid import grid_score

ROOT = Path(__file__).resolve().parents[2]


def load(path: Path, side: int) -> torch.Tensor:
    im = Image.open(path).convert("RGB")
    s = min(im.size)
    im = im.crop(((im.width - s) // 2, (im.height - s) // 2, (im.width + s) // 2, (im.height + s) // 2))
    im = im.resize((side, side), Image.Resampling.BICUBIC)
    return torch.from_numpy(np.asarray(im, dtype=np.float32).copy()).permute(2, 0, 1)[None]


def smooth(side: int) -> torch.Tensor:
    """A sky-like input: two gentle colour gradients and a soft blob, no texture."""
    y, x = torch.meshgrid(torch.linspace(0, 1, side), torch.linspace(0, 1, side), indexing="ij")
    blob = torch.exp(-((x - 0.6) ** 2 + (y - 0.4) ** 2) / 0.05)
    rgb = torch.stack([90 + 80 * y + 40 * blob, 140 + 50 * x, 200 - 60 * y + 20 * blob])
    return rgb[None]


@contextlib.contextmanager
def bilinear_upsampling(model):
    """Swap every nearest ×2 (decoder and merge) for bilinear, inference only."""
    real = F.interpolate

    def interp(x, *args, **kw):
        if kw.get("mode") == "nearest" and kw.get("scale_factor") == 2.0:
            kw["mode"] = "bilinear"
            kw["align_corners"] = False
        return real(x, *args, **kw)

    F.interpolate = interp
    try:
        yield
    finally:
        F.interpolate = real


def score(x: torch.Tensor) -> float:
    return float(grid_score(x.clamp(0, 255))[0])


def channel_median(x: torch.Tensor) -> float:
    """Median over channels of each channel's grid score (its own pixel units)."""
    return float(grid_score(x[0])[:].median()) if x.shape[-1] >= 16 else float("nan")


@torch.no_grad()
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--painting", default="/work/shared/data/styles/the_scream.jpg")
    ap.add_argument("--photo", default=str(ROOT / "styleforge/assets/chelsea.jpg"))
    args = ap.parse_args()
    model, _ = load_arbitrary(args.weights)
    painting = load(Path(args.painting), 512)
    code = model.encode_style(painting)
    styles = [(code, 1.0)]
    for name, x in (("smooth", smooth(args.size)), ("photo", load(Path(args.photo), args.size))):
        one = model.stylize(x, styles)
        two = model.stylize(one, styles)
        feats = model.encode(x)
        recon = model.decode({k: feats[k] for k in model.config.levels}).clamp(0, 255)
        with bilinear_upsampling(model):
            one_bl = model.stylize(x, styles)
            two_bl = model.stylize(one_bl, styles)
        print(f"[{name} {args.size}px] input {score(x):.1f}  1 pass {score(one):.1f}  2 passes {score(two):.1f}  "
              f"decoder on own features {score(recon):.1f}  | bilinear up: 1 pass {score(one_bl):.1f}  "
              f"2 passes {score(two_bl):.1f}")
        # Decoder stages: activations after each layer, per-channel median score.
        h = model.transfer_features(feats, styles)
        z = h[model.config.levels[-1]]
        for level in reversed(model.config.levels[:-1]):
            up = F.interpolate(model.merge[level](z), scale_factor=2.0, mode="nearest")
            z = h[level] + up
        stages = []
        for i, layer in enumerate(model.decoder):
            z = layer(z)
            if not isinstance(layer, Upsample):
                stages.append(f"{i}:{z.shape[-1]}px {channel_median(z):.1f}")
        print("   decoder layers (per-channel median score):", "  ".join(stages))
        for label, img in (("input", x), ("1-pass output", one)):
            e = model.encode(img)
            print(f"   encoder on {label}: relu1_1 {channel_median(e['relu1_1']):.1f}  "
                  f"relu2_1 {channel_median(e['relu2_1']):.1f}  relu3_1 {channel_median(e['relu3_1']):.1f}")
    # Stroke scale auto: a 2× larger input, the model at half size, precompensated and upsampled.
    big = load(Path(args.photo), 2 * args.size)
    small = downscale(big, (args.size, args.size))
    out_small = model.stylize(model.stylize(small, styles), styles)
    auto = upscale_styled(big, small, out_small)
    plain = F.interpolate(out_small, size=big.shape[-2:], mode="bicubic", align_corners=False)
    print(f"[auto {2 * args.size}px from {args.size}] 2 passes small {score(out_small):.1f}  "
          f"auto (precompensated + detail) {score(auto):.1f}  plain bicubic {score(plain):.1f}")


if __name__ == "__main__":
    main()
