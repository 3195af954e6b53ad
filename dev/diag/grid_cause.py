"""Where the built-in styles' fixed 4-px grid comes from: per-layer spectra and the losses' view.

    python dev/diag/grid_cause.py --photo styleforge/assets/chelsea.jpg \
        --vgg ../shared/data/vgg16_relu4_3.fp16.pth --painting ../shared/data/styles/candy.jpg

Prints three tables (the numbers behind docs/training.md's "The 4-px grid"):
1. per layer of TransformerNet, shipped weights and random init: the activations' `phase_ratio`,
   the variance across the 16 (y mod 4, x mod 4) phase means of each channel over the channel's
   variance, in output pixels (a layer at half or quarter resolution is compared at its own
   stride: nearest ×2 upsampling makes a half-res layer's period-2 pattern the output's period 4);
   a photo is ~1e-4, a fixed grid ≥ 1e-2.
2. the output's grid_score (shared/tools/style_metrics.py's measure, re-implemented here).
3. the losses' sensitivity: the relative change of the VGG Gram style loss and of the relu2_2
   content loss when a fixed period-4 grid, white noise or a smooth bump of the same RMS
   (4 grey levels) is added to a stylized output, and when the output's own lattice is removed.
A dev tool: not imported by the package.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from styleforge.io.image import load_image, pil_to_tensor  # noqa: E402
from styleforge.models.checkpoint import build_model, load_checkpoint  # noqa: E402
from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training.grid import grid_score_array, phase_variance  # noqa: E402
from styleforge.training.losses import CONTENT_LAYER, STYLE_LAYERS, gram, style_targets  # noqa: E402
from styleforge.training.samples import network_photo  # noqa: E402
from styleforge.training.trainer import fresh_model  # noqa: E402


def layer_outputs(model, x):
    """(name, activation, stride in output pixels) after each stage of the network."""
    out = []
    y = model.relu(model.in1(model.conv1(x)))
    out.append(("conv1+in1", y, 1))
    y = model.relu(model.in2(model.conv2(y)))
    out.append(("conv2+in2 (s2)", y, 2))
    y = model.relu(model.in3(model.conv3(y)))
    out.append(("conv3+in3 (s2)", y, 4))
    for i, block in enumerate(model.residual_blocks(), 1):
        y = block(y)
    out.append(("res5", y, 4))
    up = F.interpolate(y, scale_factor=2, mode="nearest")
    out.append(("nearest x2 of res5", up, 2))
    y = model.relu(model.in4(model.deconv1(y)))
    out.append(("deconv1+in4", y, 2))
    y = model.relu(model.in5(model.deconv2(y)))
    out.append(("deconv2+in5", y, 1))
    y = model.deconv3(y)
    out.append(("deconv3 (output)", y, 1))
    return out


def phase_ratio(act: torch.Tensor, stride: int) -> float:
    """Median over channels of the phase-mean variance / channel variance, at the period that is
    4 output pixels (4/stride samples of this layer; 1 sample at stride 4 cannot show one)."""
    period = 4 // stride
    if period < 2:
        return float("nan")
    a = act[0]
    c, h, w = a.shape
    a = a[:, :h - h % period, :w - w % period]
    means = a.reshape(c, h // period, period, w // period, period).mean(dim=(1, 3))
    ratio = means.reshape(c, -1).var(dim=1) / a.reshape(c, -1).var(dim=1).clamp_min(1e-12)
    return float(ratio.median())


@torch.no_grad()
def table_layers(photo: torch.Tensor, weights: list[Path]) -> None:
    models = [(p.stem, build_model(load_checkpoint(p))) for p in weights]
    models.append(("random init", fresh_model(0).eval()))
    print("\n1. phase_ratio per layer (photo itself: %.1e)" % phase_ratio(photo, 1))
    rows = {name: [] for name, _ in models}
    names = None
    for name, model in models:
        acts = layer_outputs(model, photo)
        names = [n for n, _, _ in acts]
        rows[name] = [phase_ratio(a, s) for _, a, s in acts]
    print(f"{'layer':22s}" + "".join(f"{n[:13]:>14s}" for n in rows))
    for i, layer in enumerate(names):
        if not all(np.isnan(rows[n][i]) for n in rows):   # quarter-res layers cannot hold a 4-px period
            print(f"{layer:22s}" + "".join(f"{rows[n][i]:14.2e}" for n in rows))
    print("\n2. grid_score of the output")
    for name, model in models:
        out = model(photo).clamp(0, 255)
        print(f"  {name:16s} {grid_score_array(out[0].mean(0).numpy()):8.1f}")


def fixed_grid(shape, rms: float) -> torch.Tensor:
    """A luminance pattern of period 4 in x and y (as the shipped styles show), of the given RMS."""
    _, _, h, w = shape
    cell = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    pattern = (cell.repeat(1, w // 4 + 1)[:, :w] + cell.T.repeat(h // 4 + 1, 1)[:h]) / 2
    pattern = pattern + 0.5 * torch.tensor([[1.0, -1.0]]).repeat(h, w // 2 + 1)[:, :w]
    pattern = pattern - pattern.mean()
    return (pattern / pattern.pow(2).mean().sqrt() * rms).expand(1, 3, h, w)


def own_grid(out: torch.Tensor, window: int = 32) -> torch.Tensor:
    """The output's lattice: per 32-px window and channel, its 16 phase means less their mean,
    tiled over the window. Subtracting it leaves the output without its fixed grid."""
    b, c, h, w = out.shape
    ny, nx, k = h // window, w // window, window // 4
    x = out[..., :ny * window, :nx * window].reshape(b, c, ny, k, 4, nx, k, 4)
    means = x.mean(dim=(3, 6), keepdim=True)
    lattice = (means - means.mean(dim=(4, 7), keepdim=True)).expand_as(x).reshape(b, c, ny * window, nx * window)
    return F.pad(lattice, (0, w - nx * window, 0, h - ny * window))


def table_losses(photo: torch.Tensor, out: torch.Tensor, vgg, painting: torch.Tensor, rms: float) -> None:
    targets = style_targets(vgg, painting)
    gen = torch.Generator().manual_seed(0)
    noise = torch.randn(out.shape, generator=gen)
    noise = noise / noise.pow(2).mean().sqrt() * rms
    h, w = out.shape[-2:]
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    bump = torch.exp(-(xx ** 2 + yy ** 2) * 4).expand(1, 3, h, w)
    bump = (bump - bump.mean()) / (bump - bump.mean()).pow(2).mean().sqrt() * rms
    photo_feats = vgg(photo)

    def losses(image):
        feats = vgg(image)
        style = sum(F.mse_loss(gram(getattr(feats, n)), t) for n, t in zip(STYLE_LAYERS, targets))
        per_layer = [float(F.mse_loss(gram(getattr(feats, n)), t)) for n, t in zip(STYLE_LAYERS, targets)]
        content = F.mse_loss(getattr(feats, CONTENT_LAYER), getattr(photo_feats, CONTENT_LAYER))
        return float(style), per_layer, float(content)

    base_style, base_layers, base_content = losses(out)
    print(f"\n3. loss change when a pattern of RMS {rms} grey levels is added to the stylized output")
    print(f"{'pattern':14s}{'style':>10s}{'relu1_2':>10s}{'relu2_2':>10s}{'relu3_3':>10s}{'relu4_3':>10s}"
          f"{'content':>10s}")
    own = -own_grid(out)
    print(f"   (the output's own lattice: RMS {float(own.pow(2).mean().sqrt()):.2f} grey levels)")
    for name, delta in (("period-4 grid", fixed_grid(out.shape, rms)), ("white noise", noise),
                        ("smooth bump", bump), ("own grid removed", own)):
        style, layers, content = losses((out + delta).clamp(0, 255))
        rel = [(a - b) / b for a, b in zip(layers, base_layers)]
        print(f"{name:14s}{(style - base_style) / base_style:10.2%}" + "".join(f"{r:10.2%}" for r in rel)
              + f"{(content - base_content) / base_content:10.2%}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--photo", default="styleforge/assets/chelsea.jpg")
    p.add_argument("--weights", nargs="*", default=["styleforge/styles/candy.safetensors",
                                                     "styleforge/styles/starry_night.safetensors"])
    p.add_argument("--vgg", default="data/vgg16_relu4_3.fp16.pth")
    p.add_argument("--painting", default="data/styles/candy.jpg")
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--rms", type=float, default=4.0)
    args = p.parse_args()
    torch.set_grad_enabled(False)
    photo = network_photo(args.photo, args.size)
    table_layers(photo, [Path(w) for w in args.weights])
    vgg = load_vgg16(args.vgg, "cpu", torch.float32)
    painting = pil_to_tensor(load_image(args.painting).resized(512).rgb)
    out = build_model(load_checkpoint(args.weights[0]))(photo).clamp(0, 255)
    print(f"\n   phase_variance of output {float(phase_variance(out).mean()):.3g}, "
          f"photo {float(phase_variance(photo).mean()):.3g} (grey levels², training/grid.py)")
    table_losses(photo, out, vgg, painting, args.rms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
