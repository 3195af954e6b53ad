"""Device probe of the fused residual-block convolution: correctness at a glance, then per-layer
graph-replay timings against cuDNN + the InstanceNorm op, then the engine's two plans end to end.

Per layer (batch 1, channels_last, graph of 20 back-to-back calls, median of 7 replays, L2 not
flushed: these are the activations' steady state inside a frame):
  cudnn_conv   F.conv2d on the normalised, (upsampled,) reflection-padded input (the cuDNN plan)
  in_op        kernels.instance_norm(relu, pad=1, upsample) that makes that input
  fused        conv3x3_norm(affine+relu): prologue, conv, epilogue moments and the hand-off kernel
  moments      norm_scale_shift alone (the hand-off out of a cuDNN convolution)
for the residual link (128→128) and the decoder links (128→64, 64→32, ×2 upsample); the ten residual
convolutions as one conv3x3_residual_chain call against ten conv3x3_norm calls (128² and 64² planes).
End to end: FusedRunner captures its plans per shape and records each frame's replay time (512² bf16
again with STYLEFORGE_CONV3X3_CHAIN=off).
Writes JSON to --out. Run from the repo root with PYTHONPATH=$PWD.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from styleforge import kernels
from styleforge.kernels import reference_conv3x3 as ref

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # cuda_graphs
from cuda_graphs import capture

C = 128


def graph_ms(fn, calls=20, reps=7) -> float:
    graph = capture(fn, calls)
    graph.replay()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def layer_rows(cin, cout, up, h, w, dtype):
    """One link at input size h × w: cuDNN (norm op with its upsample/pad, then conv) vs the fused op."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(1, cin, h, w, device="cuda", generator=g) + 0.3).to(dtype).contiguous(
        memory_format=torch.channels_last)
    wt = (torch.randn(cout, cin, 3, 3, device="cuda", generator=g) / (cin * 9) ** 0.5).to(dtype)
    wcl = wt.contiguous(memory_format=torch.channels_last)
    packed = ref.pack_weight(wt)
    pw, pb = torch.rand(cin, device="cuda") + 0.5, torch.randn(cin, device="cuda")
    s, t = ref.norm_scale_shift(x, pw, pb) if cin == 128 else (None, None)
    if s is None:   # 64 channels: the same affine computed directly
        var, mean = torch.var_mean(x.float(), dim=(2, 3), unbiased=False)
        s = pw * torch.rsqrt(var + 1e-5)
        t = pb - mean * s
    nw, nb = torch.rand(cout, device="cuda") + 0.5, torch.randn(cout, device="cuda")
    fused = lambda: torch.ops.styleforge.conv3x3_norm(x, packed, s, t, None, True, up, False, nw, nb, 1e-5, True)
    out, os_, ot, _ = fused()
    want, ws, wt_, _ = ref.conv3x3_norm(x, packed, s, t, None, True, up, False, nw, nb, 1e-5)
    err = float((out.double() - want.double()).norm() / want.double().norm())
    serr = float((os_ - ws).norm() / ws.norm())
    normed = kernels.instance_norm(x, pw, pb, relu=True, pad=1, upsample=up)
    ho, wo = h * up, w * up
    flops = 2 * ho * wo * cin * cout * 9
    row = {"layer": f"{cin}->{cout} x{up}", "shape": f"1x{cin}x{h}x{w}", "dtype": str(dtype).split(".")[-1],
           "rel_err_vs_reference": err, "scale_rel_err": serr}
    row["cudnn_conv_ms"] = graph_ms(lambda: F.conv2d(normed, wcl))
    row["in_op_ms"] = graph_ms(lambda: kernels.instance_norm(x, pw, pb, relu=True, pad=1, upsample=up))
    row["fused_ms"] = graph_ms(fused)
    if cin == 128 and up == 1:
        row["fused_keep_residual_ms"] = graph_ms(
            lambda: torch.ops.styleforge.conv3x3_norm(x, packed, s, t, x, False, 1, True, nw, nb, 1e-5, True))
        row["moments_ms"] = graph_ms(lambda: torch.ops.styleforge.norm_scale_shift(x, nw, nb, 1e-5))
    row["cudnn_tflops"] = flops / row["cudnn_conv_ms"] / 1e9
    row["fused_tflops"] = flops / row["fused_ms"] / 1e9
    row["cudnn_plus_in_over_fused"] = (row["cudnn_conv_ms"] + row["in_op_ms"]) / row["fused_ms"]
    return row


def chain_rows(h, w, dtype):
    """The ten residual convolutions at plane h × w: one conv3x3_residual_chain call (the persistent
    kernel where the tiles fit) against ten conv3x3_norm calls (kernel + hand-off each)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(1, C, h, w, device="cuda", generator=g) + 0.3).to(dtype).contiguous(
        memory_format=torch.channels_last)
    weights = [ref.pack_weight((torch.randn(C, C, 3, 3, device="cuda", generator=g) / (C * 27) ** 0.5).to(dtype))
               for _ in range(10)]
    nws = [torch.rand(C, device="cuda", generator=g) + 0.5 for _ in range(10)]
    nbs = [torch.randn(C, device="cuda", generator=g) * 0.1 for _ in range(10)]
    s, t = ref.norm_scale_shift(x)
    state = kernels.chain_state(1, 10, "cuda")
    chain = lambda: torch.ops.styleforge.conv3x3_residual_chain(x, s, t, weights, nws, nbs, 1e-5, state)
    links = lambda: ref.residual_chain(x, s, t, weights, nws, nbs, 1e-5, conv=torch.ops.styleforge.conv3x3_norm)
    got, want = chain(), links()
    err = max(float((a.double() - b.double()).norm() / b.double().norm()) for a, b in zip(got, want))
    row = {"chain": f"10 x 128->128 at {h}x{w}", "dtype": str(dtype).split(".")[-1], "rel_err_vs_links": err,
           "state_zero_after": bool((state == 0).all())}
    row["chain_ms"] = graph_ms(chain)
    row["links_ms"] = graph_ms(links)
    row["per_link_us"] = {"chain": 100 * row["chain_ms"], "links": 100 * row["links_ms"]}
    row["links_over_chain"] = row["links_ms"] / row["chain_ms"]
    return row


FRAME_SIZES = ((256, 256), (512, 512), (1080, 1920), (2160, 3840))


def frame_rows(dtype, sizes=FRAME_SIZES):
    from styleforge.engine.fused import FusedRunner
    from styleforge.models.checkpoint import build_model, load_checkpoint
    styles = sorted((Path("styleforge") / "styles").glob("*.safetensors"))
    model = build_model(load_checkpoint(styles[0])).cuda().eval()
    rows = []
    chain = os.environ.get("STYLEFORGE_CONV3X3_CHAIN", "auto")
    for h, w in sizes:
        runner = FusedRunner(model, torch.device("cuda"), dtype)
        x = torch.rand(1, 3, h, w, device="cuda") * 255
        runner(x)
        choice = runner.layer_choices[("residual", (1, 3, h, w))]
        rows.append({"frame": f"{h}x{w}", "dtype": str(dtype).split(".")[-1], "chain": chain,
                     "chosen": choice.provider, "reason": choice.reason, "plan_ms": choice.plans})
        del runner
        torch.cuda.empty_cache()
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="out/conv3x3")
    parser.add_argument("--no-frames", action="store_true")
    parser.add_argument("--chain-only", action="store_true", help="the residual chain rows, no single links")
    parser.add_argument("--all-frames", action="store_true", help="1080p and 4K frames too (three plans each)")
    parser.add_argument("--frames-only", action="store_true", help="bf16 frames only: no layer rows, no fp16")
    args = parser.parse_args()
    ok, why = kernels.cuda_kernels_available()
    assert ok, why
    props = torch.cuda.get_device_properties(0)
    result = {"gpu": props.name, "torch": torch.__version__, "cuda": torch.version.cuda, "layers": [], "frames": []}
    links = [(128, 128, 1, 128, 128), (128, 128, 1, 270, 480), (128, 64, 2, 128, 128), (64, 32, 2, 256, 256),
             (128, 64, 2, 270, 480), (64, 32, 2, 540, 960)]
    dtypes = (torch.bfloat16,) if args.frames_only else (torch.bfloat16, torch.float16)
    for dtype in () if args.frames_only else dtypes:
        for h, w in ((128, 128), (64, 64)):
            row = chain_rows(h, w, dtype)
            print(json.dumps(row), flush=True)
            result["layers"].append(row)
    if args.chain_only or args.frames_only:
        links = []
    for dtype in dtypes:
        for cin, cout, up, h, w in links:
            row = layer_rows(cin, cout, up, h, w, dtype)
            print(json.dumps(row), flush=True)
            result["layers"].append(row)
    if not args.no_frames:
        for dtype in dtypes:
            for row in frame_rows(dtype, FRAME_SIZES if args.all_frames else ((256, 256), (512, 512))):
                print(json.dumps(row), flush=True)
                result["frames"].append(row)
        # The same 512² frame with the residual blocks as separate conv3x3_norm calls (A/B, same run).
        os.environ["STYLEFORGE_CONV3X3_CHAIN"] = "off"
        for row in frame_rows(torch.bfloat16, ((512, 512),)):
            print(json.dumps(row), flush=True)
            result["frames"].append(row)
        del os.environ["STYLEFORGE_CONV3X3_CHAIN"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_layer.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
