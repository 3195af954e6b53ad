"""Why the residual chain's first link takes ~23 µs in the 512² frame and ~12 alone (frame_phases.py):
the chain (bf16, 128² plane, profile build) replayed in graphs of 20 rounds, each round the chain and
something between it and the next round's chain:
  alone     nothing (the chain's code and weights stay in each SM's instruction cache and in L2);
  small     a small elementwise kernel on every SM (tiny code, 4 MB of data);
  other     the fp16 chain (a second 120 KB of code on the same SMs, data that fits L2);
  flush     a 256 MB copy (tiny code; L2's lines, the chain's code and weights among them, evicted);
  both      the fp16 chain and the flush.
For each case: the bf16 chain's wall time and its first two links' phases (medians over rounds).
    PYTHONPATH=$PWD python3 dev/kernels/frame/cold_start.py --out $OUT
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conv3x3"))
from chain_profile import chain_inputs
from cuda_graphs import capture
from frame_phases import launches, load_profile_build, summarise

ROUNDS = 20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="out/frame")
    args = parser.parse_args()
    lib = load_profile_build()
    from styleforge import kernels

    buf = torch.zeros(1 << 24, dtype=torch.int64, device="cuda")
    x, s, t, weights, nws, nbs = chain_inputs(128, 128)
    half = [x.half(), [w.half() for w in weights]]   # packing only permutes: cast after it is packing the cast
    state_b, state_h = kernels.chain_state(1, 10, "cuda"), kernels.chain_state(1, 10, "cuda")
    small = torch.randn(1 << 20, device="cuda")
    big_src, big_dst = torch.empty(1 << 26, device="cuda"), torch.empty(1 << 26, device="cuda")   # 256 MB each
    big_src.normal_()

    def chain_b():
        torch.ops.styleforge.conv3x3_residual_chain(x, s, t, weights, nws, nbs, 1e-5, state_b)

    def chain_h():
        torch.ops.styleforge.conv3x3_residual_chain(half[0], s, t, half[1], nws, nbs, 1e-5, state_h)

    cases = {"alone": [], "small": [lambda: small.mul_(1.0001)], "other": [chain_h],
             "flush": [lambda: big_dst.copy_(big_src)], "both": [chain_h, lambda: big_dst.copy_(big_src)]}
    result = {}
    for name, between in cases.items():
        def round_(between=between):
            chain_b()
            for fn in between:
                fn()
        lib.sf_tile_profile_set(buf.data_ptr(), buf.numel())
        graph = capture(round_, ROUNDS, warmups=2)
        graph.replay()
        buf.zero_()
        torch.cuda.synchronize()
        graph.replay()
        torch.cuda.synchronize()
        per_round = 1 + between.count(chain_h)   # profiled launches per round: the bf16 chain first
        metas = launches(lib)[-ROUNDS * per_round:]   # the graph's (the warm-up calls' came first)
        host = buf.cpu()
        rows = [summarise(host, metas[i * per_round], 0) for i in range(1, ROUNDS)]   # round 0 follows capture
        wall = [r["end_us"] - r["start_us"] for r in rows]
        keys = ("prologue", "affine", "main_loop", "epi_sum", "epi_m2_stage", "epi_store", "tile", "barrier")
        result[name] = {"chain_us": round(statistics.median(wall), 2),
                        "link0": {k: round(statistics.median(r["links"][0][k] for r in rows), 3) for k in keys},
                        "link1": {k: round(statistics.median(r["links"][1][k] for r in rows), 3) for k in keys},
                        "link5_tile": round(statistics.median(r["links"][5]["tile"] for r in rows), 3)}
        print(name, json.dumps(result[name]), flush=True)
        del graph
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cold_start.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
