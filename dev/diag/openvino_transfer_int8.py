"""Would INT8 projections and FFN make the arbitrary model's attention blocks cheaper on the CPU?

Quantizes the engine's cached fp32 attention IR (`TransferPart`) with NNCF, calibrated on the
encoder's features of the shipped photos and the other photos' merged codes (as the decoder's
calibration pairs them), the SDPA left fp32. `--mode transformer` is NNCF's transformer preset
(only the MatMuls' inputs: the projections and FFN); `--mode all` its default (every op it can).
Prints which ops got quantizers, each level's output error against fp32 (mean |Δ| / mean |fp32|)
and CPU ms per inference of both models, alternating, on one photo at two sizes. A dev
experiment, not shipped (docs/cpu.md "Tried" has its result):

    python dev/diag/openvino_transfer_int8.py --photo P --painting Q [--mode transformer]
"""
from __future__ import annotations

import argparse
import collections
import os
import time

import numpy as np
import torch

from styleforge.bench.cpu_arbitrary import load_photo
from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.arbitrary_openvino import ARBITRARY_RECIPE, TRANSFER_GRAPH, TransferPart, code_inputs
from styleforge.engine.openvino_runner import calibration_images, compile_config, load_or_build
from styleforge.engine.options import StylizeOptions
from styleforge.models.arbitrary.model import pad_to_multiple


def inputs(net, feats, code) -> list[np.ndarray]:
    return ([np.ascontiguousarray(feats[level].numpy()) for level in net.levels]
            + [np.ascontiguousarray(t.numpy()) for t in code_inputs(code, net.model.config.levels)])


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True)
    parser.add_argument("--painting", required=True)
    parser.add_argument("--mode", choices=("transformer", "all"), default="transformer")
    parser.add_argument("--sides", type=int, nargs="+", default=[320, 512])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    import nncf
    import openvino as ov
    torch.set_num_threads(2)
    engine = ArbitraryStylizer(StylizeOptions(device="cpu", backend="openvino", precision="int8"))
    net = engine.openvino
    multiple = net.model.config.multiple
    fp32 = load_or_build(TransferPart(net.model), "fp32", tag=f"arb{ARBITRARY_RECIPE}-transfer{TRANSFER_GRAPH}")
    photos = [pad_to_multiple(torch.from_numpy(a), multiple) for a in calibration_images()]
    codes = [net.encode_style(p) for p in photos[::4]]
    calibration = [inputs(net, net.encode(p), codes[(i // 4 + 1) % len(codes)]) for i, p in enumerate(photos)]
    preset = {"model_type": nncf.ModelType.TRANSFORMER} if args.mode == "transformer" else {}
    int8 = nncf.quantize(fp32.clone(), nncf.Dataset(calibration), subset_size=len(calibration),
                         fast_bias_correction=True, **preset,
                         ignored_scope=nncf.IgnoredScope(types=["ScaledDotProductAttention"], validate=False))
    fed = collections.Counter(t.get_node().get_type_name() for op in int8.get_ordered_ops()
                              if op.get_type_name() == "FakeQuantize" for t in op.output(0).get_target_inputs())
    print(f"mode {args.mode}: quantizers feed {dict(fed)}")
    core = ov.Core()
    requests = {name: core.compile_model(m, "CPU", compile_config(p, 2)).create_infer_request()
                for name, m, p in (("fp32", fp32, "fp32"), ("int8", int8, "int8"))}
    code = engine.style_code(args.painting)
    levels = net.model.config.levels
    for side in args.sides:
        feed = dict(enumerate(inputs(net, net.encode(pad_to_multiple(load_photo(args.photo, side), multiple)), code)))
        outs = {}
        for name, request in requests.items():
            request.infer(feed)
            outs[name] = [np.array(request.get_output_tensor(i).data) for i in range(len(levels))]
        for i, level in enumerate(levels):
            ref = outs["fp32"][i]
            print(f"{side} px {level}: INT8 error {np.abs(outs['int8'][i] - ref).mean() / np.abs(ref).mean():.4f}")
        for _ in range(args.reps):
            for name, request in requests.items():
                c0 = time.process_time()
                request.infer(feed)
                print(f"{side} px {name}: CPU {1e3 * (time.process_time() - c0):.0f} ms, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
