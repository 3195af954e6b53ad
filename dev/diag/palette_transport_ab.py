"""The palette transport's two CPU forms timed back to back: PyTorch (`palette.transport`) and NumPy
(`palette_numpy.transport_numpy`, what the engine runs on the CPU).

A two-pass any-painting call on the CPU transports twice: the first pass's output fully, at the
early pass size (384 px on OpenVINO for a 512-px photo), and the last pass's a quarter of the way
at 512 px. Both are timed here on the photo itself (the cost follows the pixel count, not the
colours), the two forms alternating rep by rep so that a shared machine's load falls on both
alike; medians of CPU ms (process time, all threads) and wall ms, the load average printed, and
the largest difference between the two outputs. A dev diagnostic, not a bench row:

    python dev/diag/palette_transport_ab.py --photo P --painting Q [--reps 7 --threads 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from styleforge.bench.cpu_arbitrary import load_photo
from styleforge.engine.stroke import downscale
from styleforge.models.arbitrary.palette import encode_palette, transport
from styleforge.models.arbitrary.palette_numpy import transport_numpy

FORMS = {"torch": transport, "numpy": transport_numpy}


def timed(fn) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return (time.process_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True)
    parser.add_argument("--painting", required=True)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    photo = load_photo(args.photo)
    code = encode_palette(load_photo(args.painting))
    early = downscale(photo, tuple(round(s * 0.75) for s in photo.shape[-2:]))
    cases = {f"{tuple(early.shape[-2:])} full": (early, 1.0), f"{tuple(photo.shape[-2:])} quarter": (photo, 0.25)}
    print(f"threads {args.threads}; load at start {os.getloadavg()[0]:.2f}")
    for name, (image, strength) in cases.items():
        gap = (transport_numpy(image, code, strength) - transport(image, code, strength)).abs().max()
        spent = {form: ([], []) for form in FORMS}
        for _ in range(args.reps):
            for form, fn in FORMS.items():
                cpu, wall = timed(lambda: fn(image, code, strength))
                spent[form][0].append(cpu)
                spent[form][1].append(wall)
        for form, (cpu, wall) in spent.items():
            print(f"{name:20} {form:6} CPU ms {statistics.median(cpu):7.1f}  wall ms {statistics.median(wall):7.1f}"
                  f" (min {min(wall):7.1f})")
        print(f"{name:20} max |numpy - torch| {float(gap):.4f}")
    print(f"load at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
