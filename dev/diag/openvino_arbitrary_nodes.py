"""Where the OpenVINO parts of an arbitrary-style call spend their time, and in which precision and kernel.

Builds the engine as a user's call does (its cached OpenVINO models: encoder, attention blocks,
decoder) and runs each part on one photo's real inputs (the painting's code as the engine makes it:
merged keys by default). Per part it prints
- what the CPU plugin executes: its Convolution / FullyConnected / SDPA (`Subgraph`) nodes counted
  by runtime precision (`openvino_runner.executed_precisions`: u8/i8 where NNCF's INT8 took,
  f32 or bf16 where a layer stayed float) and kernel (`jit_avx2_I8`, `brgconv_avx2_I8`, …), every
  node counted by runtime precision, and the precision the plugin gives float layers (the INT8
  parts are compiled without a hint: bf16 where the CPU has it);
- the summed node time by node kind (OpenVINO's per-node counters) with its share, and the
  process CPU ms per inference;
- with `--per-node`, every compute node's kernel, precision and time.
`--conv-impl NAME` asks the plugin for one convolution kernel (`cpu:NAME`, e.g. `jit_avx2`, in the
nodes' `PrimitivesPriority`) in the encoder and decoder; a kernel that cannot take a node (its
zero points, its shape) is passed over for the plugin's own choice. A dev diagnostic, not a bench row:

    python dev/diag/openvino_arbitrary_nodes.py --photo P --painting Q [--side 512] [--per-node]
        [--conv-impl jit_avx2]
"""
from __future__ import annotations

import argparse
import collections
import os
import tempfile

import numpy as np
import torch
from ov_node_times import node_times  # this folder: on sys.path when run as a script

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
from styleforge.engine.openvino_runner import compile_config, cpu_report, executed_precisions, load_or_build
from styleforge.engine.options import StylizeOptions
from styleforge.models.arbitrary.model import pad_to_multiple

COMPUTE = ("Convolution", "FullyConnected", "MatMul", "Subgraph")


def with_conv_impl(model, impl: str, folder: str):
    """`model` with every Convolution asking for `cpu:impl`; the IR round trip makes the plugin read
    the hint as its typed attribute (a string set from Python is not)."""
    import openvino as ov
    model = model.clone()
    for op in model.get_ordered_ops():
        if op.get_type_name() == "Convolution":
            op.get_rt_info()["PrimitivesPriority"] = f"cpu:{impl}"
    path = os.path.join(folder, "part.xml")
    ov.save_model(model, path, compress_to_fp16=False)
    return ov.Core().read_model(path)


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True)
    parser.add_argument("--painting", required=True)
    parser.add_argument("--side", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--per-node", action="store_true", help="list every compute node")
    parser.add_argument("--conv-impl", help="ask for this convolution kernel (e.g. jit_avx2) in encoder and decoder")
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
          f"{ {level: code[level].k.shape[2] for level in levels} }; load {os.getloadavg()[0]:.2f}; "
          f"ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '-')}; conv kernel asked: {args.conv_impl or '-'}")
    print(cpu_report())
    import openvino as ov
    core = ov.Core()
    tag = f"arb{ARBITRARY_RECIPE}"
    # The engine's own cached IR (read back, never rebuilt here: the engine above made them).
    models = {"encoder": load_or_build(EncoderPart(net.model), net.precision, tag=f"{tag}-encoder"),
              "attention blocks": load_or_build(TransferPart(net.model), "fp32",
                                                tag=f"{tag}-transfer{TRANSFER_GRAPH}"),
              "decoder": load_or_build(DecoderPart(net.model), net.precision, tag=f"{tag}-decoder")}
    with tempfile.TemporaryDirectory() as folder:
        for name, inputs in parts.items():
            precision = "fp32" if name == "attention blocks" else net.precision
            model = models[name]
            if args.conv_impl and name != "attention blocks":
                model = with_conv_impl(model, args.conv_impl, folder)
            config = {**compile_config(precision, args.threads), "PERF_COUNT": True}
            compiled = core.compile_model(model, "CPU", config)
            spent, kinds, cpu = node_times(compiled.create_infer_request(), inputs, args.reps)
            cpu_ms = sum(cpu) / len(cpu)
            total = sum(spent.values())
            # After the runs: a dynamic-shape node's kernel is chosen at its first inference.
            executed = collections.Counter((layer, precision, kernel)
                                           for _, layer, precision, kernel in executed_precisions(compiled, COMPUTE))
            every = collections.Counter(op.get_rt_info()["runtimePrecision"].astype(str)
                                        for op in compiled.get_runtime_model().get_ordered_ops())
            print(f"\n{name}: {total:.0f} ms of node time, {cpu_ms:.0f} ms of process CPU per inference; "
                  f"inference precision {compiled.get_property('INFERENCE_PRECISION_HINT').to_string()}")
            print("  executes: " + ", ".join(f"{layer} {precision} {kernel} ×{n}"
                                             for (layer, precision, kernel), n in sorted(executed.items())))
            print("  all nodes by runtime precision: " + ", ".join(f"{p} ×{n}" for p, n in every.most_common()))
            by_kind: collections.Counter = collections.Counter()
            for node, ms in spent.items():
                by_kind[kinds[node][0]] += ms
            for kind, ms in by_kind.most_common(8):
                print(f"  {kind:22} {ms:8.1f} ms  {ms / total:6.1%}")
            if args.per_node:
                for node, ms in sorted(spent.items(), key=lambda kv: -kv[1]):
                    if kinds[node][0] in COMPUTE:
                        short = node.replace("__module.", "")[:60]
                        print(f"    {short:60} {kinds[node][0]:14} {kinds[node][1]:22} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
