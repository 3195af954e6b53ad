"""Where udnie's green blotches come from: CPU probes on a style network (docs/training.md
"The blotches").

    python dev/diag/udnie_blotches.py                      # shipped udnie, the asset photos + amber
    python dev/diag/udnie_blotches.py --weights runs/v1/udnie.safetensors --size 384 \
        --probes flat,seed --json out/blotches.json

A blotch pixel is one the output paints green (G − max(R, B) > `GREEN` in 0–255) where the photo
is not green (< `PHOTO_GREEN`): udnie's palette has no green, so this picks out the blotches and
nothing else on the four yardstick photos (checked by eye on the masks `--masks DIR` writes).
Probes:
  flat     constant colours plus Gaussian noise of several amplitudes: each InstanceNorm's input
           std (per channel, median), its gain 1/√(var + eps), and the output's std and blotches.
           Tests "instance norm scales a flat image's noise up".
  seed     the photos with noise of std 2 under two seeds: do the blotch masks move (IoU)?
  context  the 128² window of each photo with the most blotch pixels, stylized alone: does the
           blotch need the rest of the photo (instance norm's whole-image statistics)?
  layers   the whole photo with one InstanceNorm (or all) normalising by the blotchiest window's own
           statistics: which norm makes the window's blotch depend on the rest of the photo?
  size     the same photos stylized at several longer sides (training sees 256² crops of photos
           whose shorter side is 256): does the blotch share grow with the size?
  fixes    inference-side changes (InstanceNorm eps, a blur of the input): blotch share and the
           style ratio of the shared yardstick (`--metrics`, its VGG) at the photo's 512-px size.
A dev tool, not imported by the package; it prints and optionally writes JSON, it changes nothing.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from json_out import write_json  # noqa: E402
from torch import nn  # noqa: E402

from styleforge.engine.thumbnail import norm_statistics, with_frozen_norms  # noqa: E402
from styleforge.models.checkpoint import load_checkpoint  # noqa: E402
from styleforge.models.transformer_net import TransformerNet, width_of  # noqa: E402
from styleforge.training.samples import default_photos, network_photo  # noqa: E402

GREEN = 20.0          # output G − max(R, B) above this is a green pixel
PHOTO_GREEN = 5.0     # ...unless the photo is already green there
FLAT_COLOURS = {"grey": (128, 128, 128), "sky": (135, 170, 215), "skin": (225, 180, 150), "dark": (30, 30, 30)}
WINDOW = 128


def load_net(path: str) -> TransformerNet:
    state = load_checkpoint(path).state_dict
    net = TransformerNet(width_of({k: tuple(v.shape) for k, v in state.items()}))
    net.load_state_dict(state)
    return net.eval()


def blotch_mask(out: torch.Tensor, photo: torch.Tensor) -> torch.Tensor:
    """(H, W) bool: green in the output, not green in the photo. Both (1, 3, H, W), 0–255."""
    def greenness(x):
        return x[0, 1] - torch.maximum(x[0, 0], x[0, 2])
    return (greenness(out.clamp(0, 255)) > GREEN) & (greenness(photo) < PHOTO_GREEN)


def norms(net: nn.Module) -> dict[str, nn.InstanceNorm2d]:
    return {name: m for name, m in net.named_modules() if isinstance(m, nn.InstanceNorm2d)}


@torch.no_grad()
def trace_norm_inputs(net: nn.Module, x: torch.Tensor) -> dict[str, float]:
    """Per InstanceNorm: the median over channels of its input's std over positions."""
    stats, hooks = {}, []
    for name, m in norms(net).items():
        def hook(module, args, name=name):
            stats[name] = float(args[0].flatten(2).std(dim=2).median())
        hooks.append(m.register_forward_pre_hook(hook))
    try:
        out = net(x)
    finally:
        for h in hooks:
            h.remove()
    return stats, out


def probe_flat(net, size: int) -> list[dict]:
    rows = []
    eps = next(iter(norms(net).values())).eps
    for colour, rgb in FLAT_COLOURS.items():
        base = torch.tensor(rgb, dtype=torch.float32).view(1, 3, 1, 1).expand(1, 3, size, size)
        for sigma in (0.0, 0.5, 2.0, 8.0):
            noise = torch.randn(base.shape, generator=torch.Generator().manual_seed(0)) * sigma
            x = (base + noise).clamp(0, 255)
            stds, out = trace_norm_inputs(net, x)
            row = {"colour": colour, "noise_std": sigma,
                   "in1_input_std": round(stds["in1"], 4),
                   "in1_gain": round(1 / (stds["in1"] ** 2 + eps) ** 0.5, 1),
                   "res_input_std_median": round(statistics.median(v for k, v in stds.items()
                                                                   if k.startswith("res")), 4),
                   "out_std": round(float(out.clamp(0, 255).std(dim=(2, 3)).mean()), 2),
                   "out_mean": [round(float(v), 1) for v in out.clamp(0, 255).mean(dim=(2, 3))[0]],
                   "blotch": round(float(blotch_mask(out, x).float().mean()), 3)}
            rows.append(row)
            print(f"flat {colour:5s} noise {sigma:3.1f}: in1 input std {row['in1_input_std']:.4f} "
                  f"(gain {row['in1_gain']:.0f}), res median std {row['res_input_std_median']:.4f}, out std "
                  f"{row['out_std']:.1f}, out mean {row['out_mean']}, blotch {row['blotch']:.3f}", flush=True)
    return rows


def overlap(a: torch.Tensor, b: torch.Tensor) -> float:
    """Intersection over union of two boolean masks (0 when both are empty)."""
    return float((a & b).sum() / (a | b).sum().clamp(min=1))


@torch.no_grad()
def probe_seed(net, photos) -> list[dict]:
    rows = []
    for name, x in photos.items():
        base = blotch_mask(net(x), x)
        masks = []
        for seed in (0, 1):
            noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed)) * 2
            masks.append(blotch_mask(net((x + noise).clamp(0, 255)), x))
        iou = [overlap(m, base) for m in masks]
        between = overlap(masks[0], masks[1])
        rows.append({"photo": name, "blotch": round(float(base.float().mean()), 4),
                     "iou_vs_clean": [round(v, 3) for v in iou], "iou_seed0_seed1": round(between, 3)})
        print(f"seed {name}: blotch {rows[-1]['blotch']:.4f}, IoU noisy vs clean {rows[-1]['iou_vs_clean']}, "
              f"seed 0 vs 1 {between:.3f}", flush=True)
    return rows


def blotchiest_window(full: torch.Tensor, x: torch.Tensor) -> tuple[int, int]:
    """(y0, x0) of the WINDOW² square with the most blotch pixels in `full`, the output for `x`."""
    mask = blotch_mask(full, x).float()
    share = F.avg_pool2d(mask[None, None], WINDOW, stride=WINDOW // 4)[0, 0]
    iy, ix = divmod(int(share.argmax()), share.shape[1])
    return iy * WINDOW // 4, ix * WINDOW // 4


@torch.no_grad()
def probe_context(net, photos) -> list[dict]:
    rows = []
    for name, x in photos.items():
        full = net(x)
        y0, x0 = blotchiest_window(full, x)
        crop = x[:, :, y0:y0 + WINDOW, x0:x0 + WINDOW]
        alone = net(crop)
        in_context = full[:, :, y0:y0 + WINDOW, x0:x0 + WINDOW]
        row = {"photo": name, "window": [y0, x0, WINDOW],
               "blotch_in_context": round(float(blotch_mask(in_context, crop).float().mean()), 3),
               "blotch_alone": round(float(blotch_mask(alone, crop).float().mean()), 3),
               "photo_std_window": round(float(crop.std(dim=(2, 3)).mean()), 1),
               "photo_std_whole": round(float(x.std(dim=(2, 3)).mean()), 1)}
        rows.append(row)
        print(f"context {name}: window y{y0} x{x0}: blotch in context {row['blotch_in_context']:.3f}, alone "
              f"{row['blotch_alone']:.3f}; photo std there {row['photo_std_window']} vs whole "
              f"{row['photo_std_whole']}", flush=True)
    return rows


@torch.no_grad()
def probe_layers(net, photos) -> list[dict]:
    """Which norm carries the context: the whole photo stylized with one norm (or all) normalising
    by the blotchiest window's own statistics, as when that window is stylized alone."""
    rows = []
    names = list(norms(net))
    for photo, x in photos.items():
        full = net(x)
        y0, x0 = blotchiest_window(full, x)
        crop = x[:, :, y0:y0 + WINDOW, x0:x0 + WINDOW]
        alone = norm_statistics(net, crop)

        def share(out):
            return round(float(blotch_mask(out[:, :, y0:y0 + WINDOW, x0:x0 + WINDOW], crop).float().mean()), 3)
        row = {"photo": photo, "window": [y0, x0, WINDOW], "in_context": share(full),
               "alone": round(float(blotch_mask(net(crop), crop).float().mean()), 3),
               "swap_one": {n: share(with_frozen_norms(net, {n: alone[n]})(x)) for n in names},
               "swap_all": share(with_frozen_norms(net, alone)(x))}
        rows.append(row)
        print(f"layers {photo}: window blotch in context {row['in_context']:.3f}, alone {row['alone']:.3f}, "
              f"whole photo with the window's statistics in " + ", ".join(
                  f"{n} {v:.3f}" for n, v in row["swap_one"].items()) + f", in all {row['swap_all']:.3f}",
              flush=True)
    return rows


@torch.no_grad()
def probe_size(net, paths, sizes=(256, 384, 512, 768)) -> list[dict]:
    rows = []
    for path in paths:
        shares = {}
        for size in sizes:
            x = network_photo(path, size)
            shares[size] = round(float(blotch_mask(net(x), x).float().mean()), 4)
        rows.append({"photo": path.stem, "blotch_by_size": shares})
        print(f"size {path.stem}: blotch share by longer side {shares}", flush=True)
    return rows


def blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    k = int(3 * sigma) * 2 + 1
    t = torch.arange(k, dtype=torch.float32) - k // 2
    g = torch.exp(-t ** 2 / (2 * sigma ** 2))
    g = g / g.sum()
    x = F.pad(x, (k // 2,) * 4, mode="reflect")
    x = F.conv2d(x, g.view(1, 1, 1, k).repeat(3, 1, 1, 1), groups=3)
    return F.conv2d(x, g.view(1, 1, k, 1).repeat(3, 1, 1, 1), groups=3)


@torch.no_grad()
def probe_fixes(net, photos, metrics, painting) -> list[dict]:
    variants = [("as shipped", 1e-5, 0.0), ("eps 1", 1.0, 0.0), ("eps 100", 100.0, 0.0), ("blur 1.5", 1e-5, 1.5)]
    rows = []
    for label, eps, sigma in variants:
        for m in norms(net).values():
            m.eps = eps
        shares, ratios = [], []
        for x in photos.values():
            out = net(blur(x, sigma) if sigma else x).clamp(0, 255).round()
            shares.append(float(blotch_mask(out, x).float().mean()))
            if metrics is not None:
                ratios.append(metrics.metrics(x, out, painting)[0])
        row = {"variant": label, "blotch_median": round(statistics.median(shares), 4),
               "blotch": [round(s, 4) for s in shares],
               "style_ratio_median": round(statistics.median(ratios), 3) if ratios else None}
        rows.append(row)
        print(f"fix {label:10s}: blotch median {row['blotch_median']:.4f} {row['blotch']}, style ratio "
              f"{row['style_ratio_median']}", flush=True)
    for m in norms(net).values():
        m.eps = 1e-5
    return rows


def load_metrics(path: str | None):
    if not path or not Path(path).is_file():
        return None
    spec = importlib.util.spec_from_file_location("style_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weights", default=str(ROOT / "styleforge" / "styles" / "udnie.safetensors"))
    p.add_argument("--photos", nargs="*", default=None, help="default: the asset photos and ../main/.data/amber.jpg")
    p.add_argument("--size", type=int, default=512, help="the photos' longer side")
    p.add_argument("--flat-size", type=int, default=128)
    p.add_argument("--probes", default="flat,seed,context,layers,size,fixes")
    p.add_argument("--metrics", default="/work/main/.data/tools/style_metrics.py",
                   help="the shared yardstick (style ratio in the fixes probe); skipped if absent")
    p.add_argument("--painting", default="/work/main/.data/styles_unused/udnie.jpg")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    net = load_net(args.weights)
    paths = [Path(s) for s in args.photos] if args.photos else default_photos() + [Path("/work/main/.data/amber.jpg")]
    photos = {path.stem: network_photo(path, args.size) for path in paths if path.is_file()}
    probes = args.probes.split(",")
    result = {"weights": Path(args.weights).name, "size": args.size}
    if "flat" in probes:
        result["flat"] = probe_flat(net, args.flat_size)
    if "seed" in probes:
        result["seed"] = probe_seed(net, photos)
    if "context" in probes:
        result["context"] = probe_context(net, photos)
    if "layers" in probes:
        result["layers"] = probe_layers(net, photos)
    if "size" in probes:
        result["size"] = probe_size(net, [path for path in paths if path.is_file()])
    if "fixes" in probes:
        metrics = load_metrics(args.metrics)
        painting = metrics.load(args.painting, 512) if metrics else None
        result["fixes"] = probe_fixes(net, photos, metrics, painting)
    write_json(args.json, result, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
