"""A painting's palette code, its two CPU forms timed back to back: PyTorch (`palette.encode_palette`)
and NumPy (`palette_code_numpy.encode_palette_numpy`, what the engine runs on the CPU).

The engine encodes a painting once, at `style_size` (512 px) on the longer side, as
`paintings.painting_tensor` sizes it; each new painting a user tries pays it. The two forms
alternate rep by rep so that a shared machine's load falls on both alike. Each call's CPU time
(process time, all threads) runs until `--settle` seconds after it returns: torch's idle OpenMP
threads spin a while after a parallel op, and that CPU is the call's, not the next one's.
Medians and ranges are printed with the load average at the start and the end, and the largest
differences between the two codes. A dev diagnostic, not a bench row:

    python dev/diag/palette_code_ab.py --painting P [--reps 7 --threads 2 --settle 0.3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from PIL import Image

from styleforge.engine.paintings import painting_tensor
from styleforge.models.arbitrary.palette import encode_palette
from styleforge.models.arbitrary.palette_code_numpy import encode_palette_numpy

FORMS = {"torch": encode_palette, "numpy": encode_palette_numpy}


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--painting", required=True)
    parser.add_argument("--side", type=int, default=512)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--settle", type=float, default=0.3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    painting = painting_tensor(Image.open(args.painting).convert("RGB"), args.side)
    want, got = encode_palette(painting), encode_palette_numpy(painting)
    print(f"painting {tuple(painting.shape[-2:])}, threads {args.threads}; bases equal "
          f"{torch.equal(want.bases, got.bases)}, max gap quantiles "
          f"{float((want.quantiles - got.quantiles).abs().max()):.2e}, measure "
          f"{float((want.measure - got.measure).abs().max()):.2e}")
    print(f"load at start {os.getloadavg()[0]:.2f}")
    spent = {form: [] for form in FORMS}
    for _ in range(args.reps):
        for form, fn in FORMS.items():
            c0 = time.process_time()
            fn(painting)
            time.sleep(args.settle)
            spent[form].append((time.process_time() - c0) * 1e3)
    print(f"load at end {os.getloadavg()[0]:.2f}")
    for form, cpu in spent.items():
        print(f"{form:6} CPU ms median {statistics.median(cpu):6.1f}  range {min(cpu):6.1f}–{max(cpu):6.1f}  "
              f"all {[round(c) for c in cpu]}")


if __name__ == "__main__":
    main()
