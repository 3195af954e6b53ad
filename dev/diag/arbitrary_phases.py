"""Where the arbitrary engine's whole frame spends its GPU time, phase by phase, ours against
torch.compile: each phase of `ArbitraryStylizer._styled` (the engine's defaults: stroke scale
auto, two passes, degrid, palette all 0.25) run alone on the tensors it sees in a real frame.

Ours: each phase captured in its own CUDA graph (as the engine captures the whole frame), timed
by replays. compile: the same phase function under `torch.compile(mode="reduce-overhead")`, the
model phase written with SDPA (the bench's compile-sdpa-bf16 provider). Prints ms per phase and
the sum; the sums should come near the bench's whole-frame rows. A dev diagnostic (device only):

    PYTHONPATH=. python dev/diag/arbitrary_phases.py --weights styleforge/styles/arbitrary/arbitrary.safetensors
"""
from __future__ import annotations

import argparse

import torch
from PIL import Image

from styleforge.bench.arbitrary import provider_mode
from styleforge.bench.harness import Timer
from styleforge.bench.tiling import photo
from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.degrid import degrid
from styleforge.engine.options import StylizeOptions
from styleforge.engine.stroke import downscale, internal_size, upscale_styled
from styleforge.models.arbitrary.palette import transport


def graphed(fn, *args):
    """fn(*args) captured once; returns a replay callable (ours: the engine's capture)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(*args)
    return graph.replay


def phases(engine: ArbitraryStylizer, styles, content: torch.Tensor, model) -> dict:
    """name → (fn, args) with the frame's real intermediate tensors."""
    opts = engine.options
    inner = internal_size(*content.shape[-2:], opts.stroke_scale)
    small = downscale(content, inner)
    palette = styles[0][0].palette
    prepare = (lambda t: t) if engine.fused is not None else \
        (lambda t: t.clamp(0, 255).to(engine.dtype).contiguous(memory_format=engine.memory_format))
    out1 = model(prepare(small), styles, 1.0).float()
    mid = transport(degrid(out1).clamp(0, 255), palette)
    out2 = model(prepare(mid), styles, 1.0).float()
    last = degrid(transport(out2, palette, opts.palette_strength)).clamp(0, 255)
    return {
        "downscale": (lambda c: downscale(c, inner), (content,)),
        "model pass": (lambda s: model(prepare(s), styles, 1.0).float(), (small,)),
        "degrid": (lambda o: degrid(o).clamp(0, 255), (out1,)),
        "transport (full)": (lambda o: transport(o, palette), (out1,)),
        "transport (0.25)": (lambda o: transport(o, palette, opts.palette_strength), (out2,)),
        "upscale + detail": (lambda c, s, o: upscale_styled(c, s, o), (content, small, last)),
    }


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--size", default="1080x1920")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    h, w = (int(v) for v in args.size.split("x"))
    content = photo(w, h).cuda()
    painting = Image.fromarray(photo(384, 512)[0].permute(1, 2, 0).byte().numpy())
    timer = Timer(torch.device("cuda"), reps=50)
    ours = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, device="cuda", backend="fused"))
    ours_styles = [(ours.style_code(painting), 1.0)]
    with provider_mode("sdpa"):
        ref = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, device="cuda", precision="bf16",
                                               backend="reference"))
        ref_styles = [(ref.style_code(painting), 1.0)]
        theirs = phases(ref, ref_styles, content, ref.model.stylize)
        compiled = {name: (torch.compile(fn, mode="reduce-overhead", dynamic=False), a)
                    for name, (fn, a) in theirs.items()}
        rows = {}
        for name, (fn, a) in compiled.items():
            rows[name] = [None, timer.time(lambda: fn(*a)).median_ms]
    with provider_mode("cuda"):
        for name, (fn, a) in phases(ours, ours_styles, content, ours.fused.stylize).items():
            try:
                rows[name][0] = timer.time(graphed(fn, *a)).median_ms
            except RuntimeError as exc:
                print(f"{name}: capture failed: {exc}")
    print(f"{'phase':20s} {'ours ms':>8s} {'compile-sdpa ms':>16s}  (x2 for the model pass and degrid)")
    for name, (a, b) in rows.items():
        print(f"{name:20s} {a or float('nan'):8.3f} {b:16.3f}")
    weight = {"model pass": 2, "degrid": 2}
    total = [sum(weight.get(n, 1) * (r[i] or 0) for n, r in rows.items()) for i in (0, 1)]
    print(f"{'frame (sum)':20s} {total[0]:8.3f} {total[1]:16.3f}")


if __name__ == "__main__":
    main()
