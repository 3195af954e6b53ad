"""Where a residual link's time goes: the chain kernel built with -DSF_TILE_PROFILE=1 records, per
link and CTA, clock64 at the link's start (after the grid barrier), after the prologue, after the
main loop, after the epilogue, and at steps inside them (tile_mark's slots; tile_profile.cuh). Loads
the package's library built with that flag (frame_phases.load_profile_build), runs ten 128 → 128
links at the 512² plane, prints the median phase times in µs at the SM clock given (nvidia-smi's
clocks.sm under load), then the same per link. Run from the repo root:
    PYTHONPATH=$PWD python3 dev/kernels/conv3x3/chain_profile.py --out $OUT --mhz 1980
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from styleforge import kernels
from styleforge.kernels.reference import conv3x3 as ref

kernels.register_ops()        # ops are defined on first use (kernels/library.py)
kernels.ensure_cuda_kernels()  # and their CUDA library loaded on first use

C, LINKS = 128, 10
SLOTS = 16   # conv3x3_tile.cuh: kTileProfileSlots


def chain_inputs(h: int, w: int):
    """Ten 128 → 128 links' inputs on CUDA, bf16 (also chain_ncu.py's): x (1, C, h, w) channels_last,
    its norm's (scale, shift), the packed weights and the norms' weights and biases."""
    g = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(1, C, h, w, device="cuda", generator=g) + 0.3).to(torch.bfloat16).contiguous(
        memory_format=torch.channels_last)
    weights = [ref.pack_weight((torch.randn(C, C, 3, 3, device="cuda", generator=g) / (C * 27) ** 0.5).to(
        torch.bfloat16)) for _ in range(LINKS)]
    nws = [torch.rand(C, device="cuda", generator=g) + 0.5 for _ in range(LINKS)]
    nbs = [torch.randn(C, device="cuda", generator=g) * 0.1 for _ in range(LINKS)]
    s, t = ref.norm_scale_shift(x)
    return x, s, t, weights, nws, nbs


def main():
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frame"))
    from frame_phases import launches, load_profile_build

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="out/conv3x3")
    parser.add_argument("--mhz", type=float, default=1980.0)
    parser.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    lib = load_profile_build()   # the package's library with -DSF_TILE_PROFILE=1 (tile_profile.cuh)
    h = w = args.size
    x, s, t, weights, nws, nbs = chain_inputs(h, w)
    tiles = ((h + 7) // 8) * ((w + 15) // 16)
    buf = torch.zeros(LINKS * tiles * SLOTS, dtype=torch.int64, device="cuda")
    state = torch.zeros(ref.chain_state_bytes(1, LINKS), dtype=torch.uint8, device="cuda")
    for _ in range(20):
        # Each call from the buffer's start: the last call's marks are what is read.
        lib.sf_tile_profile_set(buf.data_ptr(), buf.numel())
        torch.ops.styleforge.conv3x3_residual_chain(x, s, t, weights, nws, nbs, 1e-5, state)
    torch.cuda.synchronize()
    assert launches(lib)[0]["entries"] == buf.numel(), "one chain launch filled the buffer"
    marks = buf.view(LINKS, tiles, SLOTS).double().cpu()
    us = 1.0 / args.mhz   # µs per cycle

    def med(cycles):
        return statistics.median(cycles.flatten().tolist()) * us

    marks[0, :, 7] = marks[0, :, 0]   # link 0 takes its affine from (scale, shift): no mark
    phases = {"prologue": marks[:, :, 1] - marks[:, :, 0], "main_loop": marks[:, :, 2] - marks[:, :, 1],
              "epilogue": marks[:, :, 3] - marks[:, :, 2],
              # the prologue's affine ready (after its first halo batch), the epilogue's steps
              "pro_affine": marks[:, :, 7] - marks[:, :, 0], "epi_sum": marks[:, :, 4] - marks[:, :, 2],
              "epi_mean": marks[:, :, 5] - marks[:, :, 4], "epi_m2_stage": marks[:, :, 6] - marks[:, :, 5],
              "epi_store": marks[:, :, 3] - marks[:, :, 6],
              # the resident links' prologue after the affine: border pixels, the tile's own pixels,
              # then the CTA barrier (thread 0's view: its wait for the slowest thread)
              "pro_border": marks[1:, :, 8] - marks[1:, :, 7], "pro_interior": marks[1:, :, 9] - marks[1:, :, 8],
              "pro_sync": marks[1:, :, 1] - marks[1:, :, 9]}
    link = marks[1:, :, 0] - marks[:-1, :, 0]   # a link's start to the next one's
    # Per link: median phases, and the time to the next link's start.
    for r in range(LINKS):
        nxt = med(link[r]) if r + 1 < LINKS else float("nan")
        print(f"link {r}: prologue {med(phases['prologue'][r]):5.2f} main {med(phases['main_loop'][r]):5.2f} "
              f"epilogue {med(phases['epilogue'][r]):5.2f} (stores {med(phases['epi_store'][r]):5.2f}) "
              f"to next start {nxt:6.2f}")
    row = {"plane": f"{h}x{w}", "tiles": tiles, "mhz": args.mhz}
    for name, cycles in phases.items():
        row[name + "_us"] = med(cycles)
        row[name + "_max_us"] = float(cycles.max()) * us
    # Barrier: from a CTA's epilogue end to its next link's start (its wait for the slowest CTA).
    row["barrier_us"] = med(marks[1:, :, 0] - marks[:-1, :, 3])
    row["link_us"] = med(link)
    print(json.dumps(row))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"chain_profile_{h}.json").write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
