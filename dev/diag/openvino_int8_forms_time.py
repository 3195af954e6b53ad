"""CPU ms per 512-px photo of one style's OpenVINO INT8 forms, timed in alternating rounds.

Builds the forms (plain NNCF INT8 as before `engine.style_int8`, its `int8` form and its
`int8-float-norm-inputs` form), then runs rounds in which each form stylizes the three asset
photos once, forms taking turns, so load from other processes falls on all of them. Prints each
form's median process CPU ms and wall ms per call and the load average. A dev diagnostic:

    python dev/diag/openvino_int8_forms_time.py --style al_sufi [--rounds 5] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from styleforge.bench.cpu import photos, to_tensor
from styleforge.engine import openvino_runner
from styleforge.engine.norm_equalize import equalize
from styleforge.models.checkpoint import build_model
from styleforge.models.registry import load_style


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--style", default="al_sufi")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import nncf
    import openvino as ov
    torch.set_num_threads(args.threads)
    model = build_model(load_style(args.style)).eval()
    calibration = openvino_runner.calibration_images()
    exported = openvino_runner.export(model)
    forms = {
        "plain int8 (before)": openvino_runner.quantize(exported.clone(), calibration),
        "int8 (equalized)": openvino_runner.quantize(
            openvino_runner.export(equalize(model, [torch.from_numpy(c) for c in calibration])), calibration),
        "int8-float-norm-inputs": openvino_runner.quantize(exported.clone(), calibration,
                                                           ignored_scope=nncf.IgnoredScope(types=["MVN"])),
    }
    config = openvino_runner.compile_config("int8", args.threads)
    requests = {name: ov.Core().compile_model(m, "CPU", config).create_infer_request() for name, m in forms.items()}
    inputs = [to_tensor(p[:p.shape[0] // 4 * 4, :p.shape[1] // 4 * 4]).numpy() for p in photos(512)]
    for request in requests.values():
        for x in inputs:
            request.infer({0: x})
    cpu = {name: [] for name in requests}
    wall = {name: [] for name in requests}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for name, request in requests.items():
            for x in inputs:
                start, start_cpu = time.perf_counter(), time.process_time()
                request.infer({0: x})
                wall[name].append((time.perf_counter() - start) * 1e3)
                cpu[name].append((time.process_time() - start_cpu) * 1e3)
        loads.append(os.getloadavg()[0])
    print(f"{args.style}, {args.threads} threads, {args.rounds} rounds × {len(inputs)} photos at 512 px, "
          f"load average {min(loads):.1f}–{max(loads):.1f}")
    for name in requests:
        print(f"  {name:26} CPU ms median {np.median(cpu[name]):7.1f}   wall ms median {np.median(wall[name]):7.1f}"
              f"   min {min(wall[name]):7.1f}")


if __name__ == "__main__":
    main()
