"""Playground (never imported): each blur the torch blend runs, at the blend's own plane shapes
for 1080p and 4K (read off a `TorchTemporalBlender` at the auto stroke factor), timed as the
convolution it replaced (`conv_blur`: depthwise, or cuDNN for one channel), as `gemm_blur` at
blocks of 32, 64 and 128, and for the feather as the binomial pools (`versions/blur_pools.py`,
the former form); the path `SeparableBlur` takes is marked; each with its largest gap
to the float64 convolution, in levels of 0–255 data. CUDA events, the median of --repeat calls
after warm-up; on the CPU, wall time.

    python dev/temporal/blur_bench.py [--sizes 1080,2160] [--device cuda] [--repeat 50]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from styleforge.engine.autotune import median_ms
from styleforge.engine.stroke import stroke_factor
from styleforge.media.band_blur import band_matrix, conv_blur, gemm_blur
from styleforge.media.temporal_torch import TorchTemporalBlender

sys.path.insert(0, str(Path(__file__).parent / "versions"))
from blur_pools import binomial_blur, binomial_radius  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--sizes", default="1080,2160")
p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
p.add_argument("--repeat", type=int, default=50)
p.add_argument("--blocks", default="32,64,128")
a = p.parse_args()
torch.set_grad_enabled(False)
device = torch.device(a.device)


def timed(fn) -> float:
    """Median ms of one call: CUDA events on the GPU (the engine's autotune timer), else wall time."""
    if device.type == "cuda":
        return median_ms(fn, reps=a.repeat, warmup=3)
    for _ in range(3):
        fn()
    times = []
    for _ in range(a.repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def blurs(height: int):
    """(name, (C, H, W) of its input, its SeparableBlur) for each blur of a steady-state blend."""
    width = height * 16 // 9
    blender = TorchTemporalBlender(stroke_factor=stroke_factor(height, width, None), device=device)
    out = [("feather", (1, height, width), blender._feather)]
    for name, pyramid, channels in (("detail", blender._detail, 3), ("band", blender._band, 6),
                                    ("window", blender._window, 2)):
        k = pyramid.factor
        out.append((f"{name} k={k} σ={pyramid.sigma:.2f}", (channels, -(-height // k), -(-width // k)), pyramid.blur))
    return out


print(f"{torch.cuda.get_device_name() if device.type == 'cuda' else 'CPU'}, torch {torch.__version__}; "
      f"ms per call (median of {a.repeat}), max |x − float64 conv| in levels")
print("| size | blur | shape | conv | " + " | ".join(f"gemm B={b}" for b in a.blocks.split(",")) + " | pools |")
print("|---|---|---|---:|" + "---:|" * len(a.blocks.split(",")) + "---:|")
for height in map(int, a.sizes.split(",")):
    for name, shape, blur in blurs(height):
        g = torch.Generator(device=device).manual_seed(0)
        image = torch.rand(shape, generator=g, device=device) * 255
        if name == "feather":
            image = (image > 100).float()
        taps = blur.taps
        reference = conv_blur(image.double(), taps.double())
        cells = []
        for fn in [lambda: conv_blur(image, taps)] + [
                (lambda band: lambda: gemm_blur(image, taps, band))(band_matrix(taps.cpu(), int(b)).to(device))
                for b in a.blocks.split(",")]:
            gap = (fn().double() - reference).abs().max().item()
            cells.append(f"{timed(fn):.3f} ({gap:.1e})")
        radius = binomial_radius(taps.cpu())
        if radius is not None:
            gap = (binomial_blur(image, radius).double() - reference).abs().max().item()
            cells.append(f"{timed(lambda: binomial_blur(image, radius)):.3f} ({gap:.1e})")
        else:
            cells.append("–")
        path = " (shipped: gemm)" if blur.gemm(shape) else " (shipped: conv)"
        print(f"| {height}p | {name}{path} | {tuple(shape)} | " + " | ".join(cells) + " |", flush=True)
