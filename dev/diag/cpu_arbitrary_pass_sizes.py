"""Does a two-pass arbitrary-style call hold its quality with one pass at a smaller internal size?

The engine runs every pass at the stroke scale's internal size (512 px for a 512-px photo). Here
each pass has its own longer side (e.g. `320,512`: the first pass at 320 px, its output brought
to 512 px for the second), with the engine's own pieces between passes (degrid, palette transport,
the stroke-scale resizes) and its model (OpenVINO INT8 by default). Each variant is scored on the
photo × painting pairs with the bench's scorer (`bench.cpu_arbitrary.score`: the shared
style_metrics) and timed on the first photo in CPU ms (process time, all threads), so the result
stands on a shared machine. A dev experiment, not a bench row:

    python dev/diag/cpu_arbitrary_pass_sizes.py --photos P... --paintings Q... --variants 512,512 320,512
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from styleforge.bench.cpu import load_metrics
from styleforge.bench.cpu_arbitrary import load_photo, score
from styleforge.engine.arbitrary import ArbitraryStylizer, palette_transport
from styleforge.engine.options import StylizeOptions
from styleforge.engine.stroke import downscale, upscale_styled


def side_size(shape: tuple[int, int], side: int) -> tuple[int, int]:
    scale = side / max(shape)
    return max(1, round(shape[0] * scale)), max(1, round(shape[1] * scale))


def resize(image: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    if tuple(image.shape[-2:]) == size:
        return image
    if size[0] < image.shape[-2]:
        return downscale(image, size)
    return F.interpolate(image, size=size, mode="bicubic", align_corners=False).clamp(0, 255)


@torch.inference_mode()
def styled(engine: ArbitraryStylizer, content: torch.Tensor, styles, sides: list[int]) -> torch.Tensor:
    """`ArbitraryStylizer._styled` with pass i at longer side sides[i] (alpha 1, palette all)."""
    model = (engine.openvino or engine.model).stylize
    palette = styles[0][0].palette
    full = tuple(content.shape[-2:])
    out = resize(content, side_size(full, sides[0]))
    for i, side in enumerate(sides):
        if i:
            out = palette_transport(engine._clean(out), palette)
            out = resize(out, side_size(full, side))
        out = model(out.clamp(0, 255), styles, 1.0).float()
    out = engine._clean(palette_transport(out, palette, engine.options.palette_strength))
    if tuple(out.shape[-2:]) != full:
        out = upscale_styled(content, downscale(content, tuple(out.shape[-2:])), out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photos", nargs="+", type=Path, required=True)
    parser.add_argument("--paintings", nargs="+", type=Path, required=True)
    parser.add_argument("--variants", nargs="+", default=["512,512", "320,512", "256,512", "512,384"])
    parser.add_argument("--backend", default="openvino")
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--style-size", type=int, default=512, help="a painting's longer side when encoded")
    parser.add_argument("--style-metrics", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    metrics = load_metrics(args.style_metrics)
    engine = ArbitraryStylizer(StylizeOptions(device="cpu", backend=args.backend, precision=args.precision,
                                              style_size=args.style_size))
    print(f"{engine.describe()}; style size {args.style_size}; load {os.getloadavg()[0]:.2f}")
    photos = [load_photo(p) for p in args.photos]
    codes = {p: [(engine.style_code(str(p)), 1.0)] for p in args.paintings}
    for variant in args.variants:
        sides = [int(v) for v in variant.split(",")]
        pairs = []
        with tempfile.TemporaryDirectory() as tmp:
            for photo in photos:
                for painting in args.paintings:
                    out = styled(engine, photo, codes[painting], sides)
                    pairs.append(score(metrics, photo, out, painting, Path(tmp)))
        styles = codes[args.paintings[0]]
        cpu = []
        for _ in range(args.reps):
            c0 = time.process_time()
            styled(engine, photos[0], styles, sides)
            cpu.append((time.process_time() - c0) * 1e3)
        quality = {k: round(statistics.median(p[k] for p in pairs), 4) for k in pairs[0]}
        print(f"passes at {variant:12} CPU {statistics.median(cpu):6.0f} ms  load {os.getloadavg()[0]:.2f}  "
              + "  ".join(f"{k} {v}" for k, v in quality.items()), flush=True)


if __name__ == "__main__":
    main()
