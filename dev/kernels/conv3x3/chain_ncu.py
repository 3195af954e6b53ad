"""One residual-chain launch (ten 128 → 128 links at the 512² frame's 128² plane, bf16) inside the
profiler's capture range, for Nsight Compute (dev/kernels/ncu_device.sh): where a
link's warps stall, per SASS line.
    ncu --profile-from-start off ... python3 dev/kernels/conv3x3/chain_ncu.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from chain_profile import LINKS, chain_inputs  # (this folder: run as a script)

from styleforge import kernels
from styleforge.kernels.reference import conv3x3 as ref

kernels.register_ops()   # ops are defined on first use (kernels/library.py); this calls them directly


def main():
    assert kernels.cuda_kernels_available()[0]
    x, s, t, weights, nws, nbs = chain_inputs(128, 128)
    state = torch.zeros(ref.chain_state_bytes(1, LINKS), dtype=torch.uint8, device="cuda")
    for profiled in (False, True):
        if profiled:
            torch.cuda.cudart().cudaProfilerStart()
        torch.ops.styleforge.conv3x3_residual_chain(x, s, t, weights, nws, nbs, 1e-5, state)
        torch.cuda.synchronize()
        if profiled:
            torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
