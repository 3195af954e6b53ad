"""Where the arbitrary engine's whole frame spends its GPU time, phase by phase, ours against
torch.compile: each phase of `ArbitraryStylizer._styled` (the engine's defaults: stroke scale
auto, two passes, degrid, palette all 0.25) run alone on the tensors it sees in a real frame.

Ours: each phase captured in its own CUDA graph (as the engine captures the whole frame), timed
by replays, its convolutions' plans timed first as the engine's warm-up times them. compile: the
same phase function under `torch.compile(mode="reduce-overhead")`, the model phase written with
SDPA (the bench's compile-sdpa-bf16 provider). Prints ours' column first (seconds), then each
phase's compile line as it is done (the compiles take most of the run; `--no-compile` skips them);
the sums should come near the bench's whole-frame rows. A dev diagnostic (device only):

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
from styleforge.engine.cudnn_flags import cudnn_flags
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
    parser.add_argument("--no-compile", action="store_true", help="ours only (seconds, not minutes)")
    args = parser.parse_args()
    h, w = (int(v) for v in args.size.split("x"))
    content = photo(w, h).cuda()
    painting = Image.fromarray(photo(384, 512)[0].permute(1, 2, 0).byte().numpy())
    timer = Timer(torch.device("cuda"), reps=50)
    weight = {"model pass": 2, "degrid": 2}
    # Ours first and printed at once: each compile below takes tens of seconds, and a device
    # call's timeout must not take ours' column with it. Lines are flushed as they come.
    ours = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, device="cuda", backend="fused"))
    ours_styles = [(ours.style_code(painting), 1.0)]
    mine = {}
    print(f"{'phase':20s} {'ours ms':>8s}  (x2 for the model pass and degrid)", flush=True)
    with provider_mode("cuda"):
        for name, (fn, a) in phases(ours, ours_styles, content, ours.fused.stylize).items():
            try:
                tf32 = torch.backends.cudnn.allow_tf32
                with cudnn_flags(True, True, tf32):    # plans timed, as in the engine's warm-up
                    fn(*a)
                with cudnn_flags(False, True, tf32):   # captured on those plans (same cache keys)
                    replay = graphed(fn, *a)
                mine[name] = timer.time(replay).median_ms
            except RuntimeError as exc:
                print(f"{name}: capture failed: {exc}", flush=True)
                continue
            print(f"{name:20s} {mine[name]:8.3f}", flush=True)
    print(f"{'frame (sum)':20s} {sum(weight.get(n, 1) * v for n, v in mine.items()):8.3f}", flush=True)
    if args.no_compile:
        return
    print(f"\n{'phase':20s} {'ours ms':>8s} {'compile-sdpa ms':>16s}", flush=True)
    theirs_total = 0.0
    with provider_mode("sdpa"):
        ref = ArbitraryStylizer(StylizeOptions(arbitrary_weights=args.weights, device="cuda", precision="bf16",
                                               backend="reference"))
        ref_styles = [(ref.style_code(painting), 1.0)]
        for name, (fn, a) in phases(ref, ref_styles, content, ref.model.stylize).items():
            compiled = torch.compile(fn, mode="reduce-overhead", dynamic=False)
            theirs = timer.time(lambda: compiled(*a)).median_ms
            theirs_total += weight.get(name, 1) * theirs
            print(f"{name:20s} {mine.get(name, float('nan')):8.3f} {theirs:16.3f}", flush=True)
    print(f"{'frame (sum)':20s} {sum(weight.get(n, 1) * v for n, v in mine.items()):8.3f} {theirs_total:16.3f}",
          flush=True)


if __name__ == "__main__":
    main()
