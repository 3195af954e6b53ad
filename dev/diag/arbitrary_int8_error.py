"""How much the arbitrary model's int8 rounding moves its outputs, estimated from the int8 file alone.

The shipped file's full-precision weights are gone (they stayed on a GPU machine), so the int8
error cannot be measured against them. It can be estimated: each int8 weight is q·s with s its
channel's scale, and the full-precision weight it came from was q·s + e, e within ±s/2 (round to
nearest; for trained weights e is spread evenly over that step). This writes K fp32 files
q·s + e' with e' drawn uniform in ±s/2 (the same distribution, independent draws): each is a model
whose int8 file is the shipped one, i.e. a stand-in for the lost weights. The outputs of the int8
file and of each stand-in, on held-out pairs, give the int8 error (PSNR) and the change of the four
measures. fp16 biases are left as they are (their rounding is ~1e-3 relative).

    python dev/diag/arbitrary_int8_error.py --photos P... --paintings Q... --metric-vgg VGG \
        --draws 3 --out out/int8_error

Runs `styleforge eval-arbitrary` (PyTorch, CPU, fp32: STYLEFORGE_OPENVINO=0) on the int8 file and
each stand-in, then prints per-draw PSNR (median and worst pair) and the medians of the measures.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from safetensors import safe_open
from safetensors.torch import save_file

from styleforge.psnr import psnr

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "styleforge" / "styles" / "arbitrary" / "arbitrary.safetensors"
SCALE = ".scale"


def stand_in(src: Path, dst: Path, seed: int) -> None:
    """An fp32 file whose int8 rounding gives `src`: q·s + uniform(±s/2) per weight."""
    gen = torch.Generator().manual_seed(seed)
    with safe_open(str(src), framework="pt") as f:
        meta, tensors = dict(f.metadata()), {k: f.get_tensor(k) for k in f.keys()}
    out = {}
    for k, v in tensors.items():
        if k.endswith(SCALE):
            continue
        if v.dtype == torch.int8:
            s = tensors[k + SCALE].float().view(-1, *[1] * (v.dim() - 1))
            noise = (torch.rand(v.shape, generator=gen) - 0.5) * s
            out[k] = (v.float() * s + noise).contiguous()
        else:
            out[k] = v.float().contiguous()
    meta["quantization"] = "float32"
    save_file(out, str(dst), metadata=meta)


def evaluate(weights: Path, args, save_dir: Path) -> dict[str, list[float]]:
    csv_path = save_dir / "rows.csv"
    if not csv_path.is_file():
        env = dict(os.environ, STYLEFORGE_OPENVINO="0", PYTHONPATH=str(REPO))
        subprocess.run([sys.executable, "-m", "styleforge", "eval-arbitrary", "--weights", str(weights),
                        "--photos", *args.photos, "--paintings", *args.paintings, "--metric-vgg", args.metric_vgg,
                        "--device", "cpu", "--precision", "fp32", "--save-dir", str(save_dir / "png"),
                        "--csv", str(csv_path), "--label", weights.stem], check=True, env=env)
    rows = list(csv.DictReader(csv_path.open()))
    keys = ("style_ratio", "content_dist", "palette_dist", "grid_score")
    return {k: [float(r[k]) for r in rows] for k in keys}


def file_psnr(a: Path, b: Path) -> float:
    return psnr(np.asarray(Image.open(a)), np.asarray(Image.open(b)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--photos", nargs="+", required=True)
    p.add_argument("--paintings", nargs="+", required=True)
    p.add_argument("--metric-vgg", required=True)
    p.add_argument("--draws", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path("out/int8_error"))
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = evaluate(SHIPPED, args, args.out / "int8")
    print("| weights | PSNR vs int8, median pair (dB) | worst pair (dB) | style ratio | content | palette | grid |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    med = {k: statistics.median(v) for k, v in base.items()}
    print(f"| int8 (shipped) | – | – | {med['style_ratio']:.4f} | {med['content_dist']:.4f} | "
          f"{med['palette_dist']:.2f} | {med['grid_score']:.2f} |")
    for d in range(args.draws):
        weights = args.out / f"stand_in_{d}.safetensors"
        if not weights.is_file():
            stand_in(SHIPPED, weights, seed=d)
        scores = evaluate(weights, args, args.out / f"draw{d}")
        pngs = sorted((args.out / "int8" / "png").glob("*.png"))
        values = [file_psnr(f, args.out / f"draw{d}" / "png" / f.name) for f in pngs]
        med = {k: statistics.median(v) for k, v in scores.items()}
        print(f"| stand-in {d} (fp32) | {statistics.median(values):.1f} | {min(values):.1f} | "
              f"{med['style_ratio']:.4f} | {med['content_dist']:.4f} | {med['palette_dist']:.2f} | "
              f"{med['grid_score']:.2f} |")
    print(f"\n_{len(pngs)} pairs; CPU fp32 (PyTorch); torch {torch.__version__}._")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
