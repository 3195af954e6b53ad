"""Where the OpenVINO parts of an arbitrary-style call spend their time, node kind by node kind.

Compiles the engine's cached OpenVINO models (encoder, attention blocks, decoder) again with
OpenVINO's per-node performance counters on, runs each on one photo's real inputs (the painting's
code as the engine makes it: merged keys by default) and prints, per part, the summed node time
by node kind (SDPA shows as `Subgraph`, the projections and FFN as `FullyConnected`) with its
share. A dev diagnostic, not a bench row:

    python dev/diag/openvino_arbitrary_nodes.py --photo P --painting Q [--side 512]
"""
from __future__ import annotations

import argparse
import collections
import os

import numpy as np
import torch

from styleforge.bench.cpu_arbitrary import load_photo
from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.arbitrary_openvino import (
    ARBITRARY_RECIPE,
    TRANSFER_GRAPH,
    DecoderPart,
    EncoderPart,
    TransferPart,
    code_inputs,
)
from styleforge.engine.openvino_runner import compile_config, load_or_build
from styleforge.engine.options import StylizeOptions
from styleforge.models.arbitrary.model import pad_to_multiple


def node_times(request, inputs: dict, reps: int) -> collections.Counter:
    request.infer(inputs)
    spent: collections.Counter = collections.Counter()
    for _ in range(reps):
        request.infer(inputs)
        for node in request.profiling_info:
            spent[node.node_type] += node.real_time.total_seconds() * 1e3 / reps
    return spent


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True)
    parser.add_argument("--painting", required=True)
    parser.add_argument("--side", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = ArbitraryStylizer(StylizeOptions(device="cpu", backend="openvino", precision="int8"))
    net = engine.openvino
    code = engine.style_code(args.painting)
    x = pad_to_multiple(load_photo(args.photo, args.side), net.model.config.multiple)
    feats = net.encode(x)
    levels = net.model.config.levels
    parts = {
        "encoder": {0: x.numpy()},
        "attention blocks": dict(enumerate([np.ascontiguousarray(feats[level].numpy()) for level in net.levels]
                                           + [np.ascontiguousarray(t.numpy()) for t in code_inputs(code, levels)])),
        "decoder": {i: np.ascontiguousarray(t.numpy()) for i, t in enumerate(net.transfer_one(feats, code))},
    }
    print(f"{engine.describe()}; photo {tuple(x.shape[-2:])}; keys per head "
          f"{ {level: code[level].k.shape[2] for level in levels} }; load {os.getloadavg()[0]:.2f}")
    import openvino as ov
    core = ov.Core()
    tag = f"arb{ARBITRARY_RECIPE}"
    # The engine's own cached IR (read back, never rebuilt here: the engine above made them).
    models = {"encoder": load_or_build(EncoderPart(net.model), net.precision, tag=f"{tag}-encoder"),
              "attention blocks": load_or_build(TransferPart(net.model), "fp32",
                                                tag=f"{tag}-transfer{TRANSFER_GRAPH}"),
              "decoder": load_or_build(DecoderPart(net.model), net.precision, tag=f"{tag}-decoder")}
    for name, inputs in parts.items():
        precision = "fp32" if name == "attention blocks" else net.precision
        config = {**compile_config(precision, args.threads), "PERF_COUNT": True}
        spent = node_times(core.compile_model(models[name], "CPU", config).create_infer_request(), inputs, args.reps)
        total = sum(spent.values())
        print(f"\n{name}: {total:.0f} ms of node time per call (summed over nodes)")
        for kind, ms in spent.most_common(8):
            print(f"  {kind:22} {ms:8.1f} ms  {ms / total:6.1%}")


if __name__ == "__main__":
    main()
