"""Where the built-in style network's OpenVINO INT8 time goes, and a rewrite of it that was not taken.

Per node kind and per node (`--per-node`): OpenVINO's own counters for the style's INT8 model as
the package builds and caches it (`OpenVINORunner`), each node's kernel and precision, and the
process CPU ms per inference; one photo at `--side`. With `--fold`, the same form is built again
from the network as `fold` rewrites it, and shown beside it:

- `PhaseUpsampleConv` replaces `UpsampleConvLayer` (nearest ×2, reflection pad 1, 3×3 conv). Each
  output pixel of a 2×2 block (phase `(a, b)`) reads a 3×3 window of the upsampled image, which
  covers only 2×2 source pixels: the taps landing on one source pixel sum into one tap, and the
  reflection of a repeated border row is that row itself (an edge pad of the small input). So the
  layer is four 2×2 convolutions of the small input, each edge-padded on its phase's sides, their
  outputs (phase-major) interleaved by DepthToSpace: 4/9 of the multiply-adds, no upsampled copy.
- `SpaceToDepthConv` replaces the last 9×9 convolution to 3 channels: on the 2×2 space-to-depth
  of its padded input it is a 5×5 convolution from 4·C to 12 channels, shuffled back. A quarter
  more multiply-adds, but the INT8 kernels, which block output channels by 8, fill 12 of 16 lanes
  instead of 3 of 8.

Exact in real arithmetic (checked here against the network before anything is timed). `--ab
ROUNDS` times both in alternating rounds (CPU ms per call, the three asset photos cropped to one
shape, 512 and 1024 px); `--painting` adds the PSNR against PyTorch fp32 and the style ratio
(`--metrics`, the shared style_metrics.py). docs/cpu.md has the numbers and why it was not taken.
A dev diagnostic:

    python dev/diag/openvino_style_nodes.py --style candy [--side 512] [--per-node] [--fold]
        [--ab 4] [--painting P --metrics M]
"""
from __future__ import annotations

import argparse
import collections
import copy
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from ov_node_times import node_times  # this folder: on sys.path when run as a script
from torch import nn

from styleforge.bench.cpu import load_metrics, photos, to_tensor
from styleforge.engine import openvino_runner, style_int8
from styleforge.engine.norm_equalize import equalize
from styleforge.models.checkpoint import build_model
from styleforge.models.registry import load_style
from styleforge.psnr import psnr

PHASES = ((0, 0), (0, 1), (1, 0), (1, 1))
# A 3×3 kernel's rows (or columns) that land on the nearer and the farther source pixel, per phase.
PHASE_TAPS = {0: ((0,), (1, 2)), 1: ((0, 1), (2,))}
INTERLEAVE_ORDER = (0, 3, 4, 1, 5, 2)   # (N, 2, 2, C, H, W) → (N, C, H, 2, W, 2)


def phase_kernels(weight: torch.Tensor) -> list[torch.Tensor]:
    """(C_out, C_in, 3, 3) → per phase in `PHASES` order, (C_out, C_in, 2, 2)."""
    out = []
    for a, b in PHASES:
        rows = torch.stack([weight[:, :, list(t), :].sum(2) for t in PHASE_TAPS[a]], 2)      # (O, I, 2, 3)
        out.append(torch.stack([rows[:, :, :, list(t)].sum(3) for t in PHASE_TAPS[b]], 3))  # (O, I, 2, 2)
    return out


class PhaseUpsampleConv(nn.Module):
    """`UpsampleConvLayer` (×2) as four 2×2 phase convolutions on the small input."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        if layer.upsample != 2 or layer.conv2d.kernel_size != (3, 3) or layer.conv2d.stride != (1, 1):
            raise ValueError("PhaseUpsampleConv folds nearest ×2 + 3×3 stride-1 layers only")
        self.weights = nn.ParameterList(nn.Parameter(k) for k in phase_kernels(layer.conv2d.weight.detach()))
        self.bias = nn.Parameter(layer.conv2d.bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        outs = [F.conv2d(F.pad(x, (1 - b, b, 1 - a, a), mode="replicate"), k, self.bias)
                for (a, b), k in zip(PHASES, self.weights)]
        y = torch.cat(outs, 1)                                     # (N, 4·C, H, W), phase-major
        c = y.shape[1] // 4
        return y.view(n, 2, 2, c, h, w).permute(*INTERLEAVE_ORDER).reshape(n, c, 2 * h, 2 * w)


def space_to_depth_kernel(weight: torch.Tensor) -> torch.Tensor:
    """(O, I, k, k), k odd → (4·O, 4·I, (k+1)/2, (k+1)/2) acting on `pixel_unshuffle(x, 2)` and giving
    `pixel_unshuffle` of the output: out channel `o·4 + a·2 + b`, in channel `i·4 + r·2 + s`, tap
    (u, v) reads the original tap (2u + r − a, 2v + s − b) where it exists."""
    o, i, k, _ = weight.shape
    half = (k + 1) // 2
    out = weight.new_zeros(o, 2, 2, i, 2, 2, half, half)
    for a, b in PHASES:
        for r, s in PHASES:
            for u in range(half):
                for v in range(half):
                    dy, dx = 2 * u + r - a, 2 * v + s - b
                    if 0 <= dy < k and 0 <= dx < k:
                        out[:, a, b, :, r, s, u, v] = weight[:, :, dy, dx]
    return out.reshape(4 * o, 4 * i, half, half)


class SpaceToDepthConv(nn.Module):
    """`ConvLayer` (odd k, stride 1) run on the 2×2 space-to-depth of its padded input."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        if layer.conv2d.stride != (1, 1) or layer.conv2d.kernel_size[0] % 2 == 0:
            raise ValueError("SpaceToDepthConv folds odd-kernel stride-1 layers only")
        self.reflection_pad = layer.reflection_pad
        self.weight = nn.Parameter(space_to_depth_kernel(layer.conv2d.weight.detach()))
        self.bias = nn.Parameter(layer.conv2d.bias.detach().repeat_interleave(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:     # H, W even: the network's are multiples of 4
        return F.pixel_shuffle(F.conv2d(F.pixel_unshuffle(self.reflection_pad(x), 2), self.weight, self.bias), 2)


def fold(model: nn.Module) -> nn.Module:
    """A copy of a `TransformerNet` with deconv1/2 as `PhaseUpsampleConv` and deconv3 as
    `SpaceToDepthConv`."""
    out = copy.deepcopy(model)
    out.deconv1 = PhaseUpsampleConv(model.deconv1)
    out.deconv2 = PhaseUpsampleConv(model.deconv2)
    out.deconv3 = SpaceToDepthConv(model.deconv3)
    return out


def interleaves_as_depth_to_space(ov_model) -> int:
    """Each Reshape → Transpose(`INTERLEAVE_ORDER`) → Reshape of an `openvino.Model` becomes one
    DepthToSpace (blocks first, block 2), in place; returns how many."""
    from openvino import opset13 as ops
    count = 0
    for op in ov_model.get_ordered_ops():
        if op.get_type_name() != "Transpose":
            continue
        order = op.input_value(1).get_node()
        if order.get_type_name() != "Constant" or tuple(int(i) for i in order.get_vector()) != INTERLEAVE_ORDER:
            continue
        before = op.input_value(0).get_node()
        after = [target.get_node() for target in op.output(0).get_target_inputs()]
        if before.get_type_name() != "Reshape" or len(after) != 1 or after[0].get_type_name() != "Reshape":
            continue
        node = ops.depth_to_space(before.input_value(0), "blocks_first", 2)
        node.set_friendly_name(after[0].get_friendly_name())
        after[0].output(0).replace(node.output(0))
        count += 1
    ov_model.validate_nodes_and_infer_types()
    return count


def folded_form(model: nn.Module, form: str, calibration: list[np.ndarray]):
    """The style's INT8 form (`style_int8.FORMS`) built from the folded network, interleaves as
    DepthToSpace (before NNCF: after it, the CPU plugin ran the last convolution in f32)."""
    import nncf
    if form == "int8":
        model = equalize(model, [torch.from_numpy(c) for c in calibration])
    ov_model = openvino_runner.export(fold(model))
    assert interleaves_as_depth_to_space(ov_model) == 2, "the frontend's interleave pattern changed"
    scope = nncf.IgnoredScope(types=["MVN"]) if form == "int8-float-norm-inputs" else None
    return openvino_runner.quantize(ov_model, calibration, ignored_scope=scope)


def inputs(side: int) -> list[np.ndarray]:
    """The asset photos at `side`, cropped to one shape (multiples of 4)."""
    shots = photos(side)
    h = min(p.shape[0] for p in shots) // 4 * 4
    w = min(p.shape[1] for p in shots) // 4 * 4
    return [np.ascontiguousarray(to_tensor(p[:h, :w]).numpy()) for p in shots]


def compile_model(ov_model, threads: int, profile: bool = False):
    import openvino as ov
    config = {**openvino_runner.compile_config("int8", threads), **({"PERF_COUNT": True} if profile else {})}
    return ov.Core().compile_model(ov_model, "CPU", config)


def nodes(name: str, ov_model, x: np.ndarray, threads: int, reps: int, per_node: bool) -> None:
    """Node time by kind (each node's fastest of `reps`), process CPU ms per inference."""
    request = compile_model(ov_model, threads, profile=True).create_infer_request()
    spent, kinds, cpu = node_times(request, {0: x}, reps, fastest=True)
    total = sum(spent.values())
    print(f"\n{name}: {total:.0f} ms of node time (fastest of {reps} per node), process CPU ms per "
          f"inference median {np.median(cpu):.0f}, load {os.getloadavg()[0]:.2f}")
    by_kind: collections.Counter = collections.Counter()
    for node, ms in spent.items():
        by_kind[kinds[node][0]] += ms
    for kind, ms in by_kind.most_common(10):
        print(f"  {kind:24} {ms:8.1f} ms  {ms / total:6.1%}")
    if per_node:
        for node, ms in sorted(spent.items(), key=lambda kv: -kv[1])[:40]:
            print(f"    {node.replace('__module.', '')[:60]:60} {kinds[node][0]:14} {kinds[node][1]:16} {ms:7.1f} ms")


def alternate(models: dict, threads: int, rounds: int) -> None:
    """CPU ms per call of each model, in alternating rounds (order reversed every other round)."""
    for side in (512, 1024):
        xs = inputs(side)
        requests = {name: compile_model(m, threads).create_infer_request() for name, m in models.items()}
        for request in requests.values():
            for x in xs:
                request.infer({0: x})
        cpu: dict[str, list[float]] = {name: [] for name in requests}
        loads = [os.getloadavg()[0]]
        for r in range(rounds):
            for name in (list(requests) if r % 2 == 0 else list(requests)[::-1]):
                for x in xs:
                    start = time.process_time()
                    requests[name].infer({0: x})
                    cpu[name].append((time.process_time() - start) * 1e3)
            loads.append(os.getloadavg()[0])
        print(f"\n{side} px {tuple(xs[0].shape[2:])}, {rounds} rounds × {len(xs)} photos, "
              f"load {min(loads):.1f}–{max(loads):.1f}")
        base = np.median(next(iter(cpu.values())))
        for name, samples in cpu.items():
            print(f"  {name:12} CPU ms median {np.median(samples):7.1f} ({np.median(samples) / base - 1:+.1%})  "
                  f"min {min(samples):7.1f}")


def quality(models: dict, model: nn.Module, painting: str, metrics_path: str, threads: int) -> None:
    """Worst-photo PSNR against PyTorch fp32 and the style ratio (geometric mean), at 512 px."""
    metrics = load_metrics(metrics_path)
    target = metrics.load(painting, 512)
    xs = [torch.from_numpy(x) for x in inputs(512)]
    with torch.no_grad():
        reference = [model(x).clamp(0, 255) for x in xs]

    def ratio(outs):
        return math.exp(np.mean([math.log(metrics.metrics(x, o.clamp(0, 255).round(), target)[0])
                                 for x, o in zip(xs, outs)]))
    fp32 = ratio(reference)
    print(f"\nquality at 512 px: fp32 style ratio {fp32:.4f}")
    for name, ov_model in models.items():
        compiled = compile_model(ov_model, threads)
        outs = [torch.from_numpy(np.array(compiled({0: x.numpy()})[compiled.output(0)], copy=True)) for x in xs]
        db = min(psnr(o.numpy(), r.numpy(), clip=True) for o, r in zip(outs, reference))
        value = ratio(outs)
        print(f"  {name:12} PSNR {db:6.2f} dB  style ratio {value:.4f} ({value / fp32 - 1:+.1%})")


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--style", default="candy")
    parser.add_argument("--side", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--per-node", action="store_true")
    parser.add_argument("--fold", action="store_true", help="build and show the folded form beside it")
    parser.add_argument("--ab", type=int, default=0, metavar="ROUNDS", help="alternating CPU ms at 512 and 1024 px")
    parser.add_argument("--painting", help="with --metrics: PSNR against fp32 and the style ratio")
    parser.add_argument("--metrics", help="the shared style_metrics.py")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = build_model(load_style(args.style)).eval()
    runner = openvino_runner.OpenVINORunner(model, "int8", threads=args.threads)   # builds or reads the cache
    digest = openvino_runner.weights_digest(model)
    tag = f"style{style_int8.STYLE_INT8_RECIPE}-{style_int8.first_form(digest)}"
    models = {"package": openvino_runner.load_or_build(model, "int8", tag=tag)}
    print(f"{args.style}: INT8 as {runner.form}; {openvino_runner.cpu_report()}")
    if args.fold:
        x = torch.rand(1, 3, 36, 52) * 255
        error = (fold(model)(x) - model(x)).abs().max().item()
        assert error < 1e-2, f"the fold is not the network: max error {error}"
        models["folded"] = folded_form(model, runner.form, openvino_runner.calibration_images())
    x = inputs(args.side)[0]
    for name, ov_model in models.items():
        nodes(name, ov_model, x, args.threads, args.reps, args.per_node)
    if args.ab:
        alternate(models, args.threads, args.ab)
    if args.painting and args.metrics:
        quality(models, model, args.painting, args.metrics, args.threads)


if __name__ == "__main__":
    main()
