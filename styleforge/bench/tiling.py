"""Tiled execution on the GPU: peak memory, speed and agreement with the untiled network.

For each size, a real photo (a bundled asset, bicubic-upscaled) runs whole-frame where it fits
(`--tiling off`, the default backend, i.e. the fused engine when available), exact-tiled and
fast-tiled under a GPU budget (`--max-gpu-memory`); rows record the median time of `--reps`
calls after one warm-up, torch's peak allocated and reserved GPU memory, and PSNR of each tiled
output against the untiled one. `--crop` writes the README's zoomed crop: untiled | exact tiled
| fast tiled | |exact − untiled| × 50, around a tile corner of the fast mode, for a visual
seam check. Rows are appended as JSON lines to `--out`. This is a benchmark, not a test.

    python -m styleforge.bench.tiling --precision bf16 --max-gpu-memory 8G --max-memory 100G \\
        --sizes 3840x2160,7680x4320,16000x12000,30000x20000 --crop docs/images/tiling_crop.png
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from importlib import resources
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..engine.options import StylizeOptions, parse_bytes
from ..engine.pipeline import Stylizer
from ..psnr import psnr


def photo(width: int, height: int) -> torch.Tensor:
    """The astronaut asset, cropped to the aspect and bicubic-upscaled: float (1, 3, H, W), CPU."""
    with resources.as_file(resources.files("styleforge") / "assets" / "astronaut.jpg") as path:
        image = Image.open(path).convert("RGB")
    side = min(image.width, image.height * width / height)
    box = (0, 0, round(side), round(side * height / width))
    image = image.crop(box).resize((width, height), Image.BICUBIC)
    return torch.from_numpy(np.asarray(image)).permute(2, 0, 1).unsqueeze(0).float()


def measure(stylizer: Stylizer, image: torch.Tensor, reps: int, warmup: bool = True) -> tuple[torch.Tensor, dict]:
    cuda = stylizer.device.type == "cuda"
    if warmup:
        stylizer(image)   # plans, cuDNN choices, graphs
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        out = stylizer(image)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    stats = {"median_s": statistics.median(times), "mode": stylizer.last_execution.describe()}
    if cuda:
        stats.update(peak_allocated_gib=torch.cuda.max_memory_allocated() / 2**30,
                     peak_reserved_gib=torch.cuda.max_memory_reserved() / 2**30)
    return out, stats


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def run(args: argparse.Namespace) -> list[dict]:
    base = dict(style=args.style, device=args.device, precision=args.precision, stroke_scale=1.0)
    budget = parse_bytes(args.max_gpu_memory) if args.device == "cuda" else None
    env = {"gpu": torch.cuda.get_device_name() if args.device == "cuda" else "cpu", "torch": torch.__version__,
           "commit": commit(),
           "precision": args.precision, "budget_gib": budget and budget / 2**30,
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    rows = []
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.lower().split("x"))
        image = photo(width, height)
        outputs = {}
        for mode in ("off", "exact", "fast"):
            if mode == "off" and width * height > args.untiled_max_pixels:
                continue
            options = StylizeOptions(**base, tiling=mode, max_gpu_memory=None if mode == "off" else budget,
                                     max_memory=args.max_memory and parse_bytes(args.max_memory))
            if args.device == "cuda":
                torch.cuda.empty_cache()
            row = {"size": size, "tiling": mode, **env}
            try:
                outputs[mode], stats = measure(Stylizer(options), image, args.reps, not args.no_warmup)
                row.update(stats, megapixels_per_s=width * height / 1e6 / stats["median_s"])
            except RuntimeError as exc:   # e.g. out of memory whole-frame
                row.update(status="failed", error=str(exc)[:300])
            if mode != "off" and "off" in outputs and mode in outputs:
                row["psnr_vs_untiled_db"] = psnr(outputs[mode], outputs["off"])
            rows.append(row)
            print(json.dumps(row), flush=True)
        if args.crop and {"off", "exact", "fast"} <= outputs.keys() and not Path(args.crop).exists():
            write_crop(args.crop, outputs, tile=Stylizer(StylizeOptions(
                **base, tiling="fast", max_gpu_memory=budget)).execution_for(height, width).tile)
    return rows


def write_crop(path: str, outputs: dict[str, torch.Tensor], tile: int, side: int = 192, zoom: int = 2) -> None:
    """Untiled | exact | fast | |exact − untiled|×50, around a fast-mode tile corner, zoomed."""
    _, _, height, width = outputs["off"].shape
    cy, cx = (height // 2) // tile * tile, (width // 2) // tile * tile
    y0, x0 = max(0, cy - side // 2), max(0, cx - side // 2)
    crops = [outputs[m][0, :, y0:y0 + side, x0:x0 + side] for m in ("off", "exact", "fast")]
    crops.append(((crops[1] - crops[0]).abs() * 50).clamp(0, 255))
    strip = torch.cat([torch.nn.functional.pad(c, (0, 4, 0, 0), value=255) for c in crops], dim=2)
    array = strip.round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).cpu().numpy()
    image = Image.fromarray(array)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    image.resize((image.width * zoom, image.height * zoom), Image.NEAREST).save(path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="3840x2160,7680x4320,16000x12000,30000x20000")
    ap.add_argument("--style", default="candy")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: small sizes only, e.g. for the crop (budget from --max-memory)")
    ap.add_argument("--precision", default="bf16", choices=("fp32", "fp16", "bf16"))
    ap.add_argument("--max-gpu-memory", default="8G")
    ap.add_argument("--max-memory", default=None, help="host RAM budget (default: the engine's)")
    ap.add_argument("--untiled-max-pixels", type=int, default=7680 * 4320)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-warmup", action="store_true", help="time the first call too (CPU crops)")
    ap.add_argument("--crop", default=None, help="write the README's seam-check crop here (PNG)")
    ap.add_argument("--out", default="benchmarks/results/tiling.jsonl")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("styleforge.bench.tiling needs a CUDA device")
    rows = run(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
