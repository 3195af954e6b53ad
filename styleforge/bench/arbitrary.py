"""Benchmark of the arbitrary-style model at 1080p and 4K, style features cached, batch 1.

Providers, same weights and the same painting's cached code: eager-fp32 and eager-bf16 (plain
PyTorch: the ops' twins, `kernels.using("reference")`), compile-bf16 (`torch.compile` of that
same model), compile-sdpa-bf16 (the same with the attention as `F.scaled_dot_product_attention`
and the FFN as two `F.linear`s in bf16: the model as a PyTorch user writes it, the stronger
baseline), and ours (bf16, the attention/FFN kernels, the whole frame captured in one CUDA
graph, as `engine/arbitrary.py` runs it). Each provider is gated first: its output must reach
`LOW_PRECISION_MIN_PSNR` against eager-fp32 (or it is reported, not timed). Rows go to
`benchmarks/results/arbitrary.csv`. Weights: a trained file (--weights) or random ones (speed
does not depend on the values). Usage: python -m styleforge.bench.arbitrary [--weights FILE]
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import subprocess
from pathlib import Path

import torch
import torch.nn.functional as F

from .. import kernels
from ..engine.arbitrary import _GraphRunner
from ..engine.arbitrary_fused import FusedArbitraryNet
from ..models.arbitrary import ArbitraryConfig, ArbitraryStyleNet, load_arbitrary
from ..psnr import psnr
from .harness import LOW_PRECISION_MIN_PSNR, Timer
from .tiling import photo

SIZES = {"1080p": (1080, 1920), "4k": (2160, 3840)}
# The whole frame runs the model twice (the default --passes 2), and bf16 differences grow through
# the second pass: on the shipped photo bf16 providers land under the usual 40 dB gate (each row's
# psnr_db says by how much); this gate still catches a broken provider.
TWO_PASS_MIN_PSNR = 30.0
RESULTS = Path("benchmarks/results/arbitrary.csv")


def random_model() -> ArbitraryStyleNet:
    """Seeded random weights scaled to keep activations alive (speed does not depend on values;
    the GPU tests use it too)."""
    torch.manual_seed(0)
    model = ArbitraryStyleNet(ArbitraryConfig())
    with torch.no_grad():
        for p in model.parameters():
            torch.nn.init.kaiming_normal_(p) if p.dim() == 4 else torch.nn.init.uniform_(p, 0.0, 0.05)
    return model.eval()


def _model(weights: str | None) -> ArbitraryStyleNet:
    return load_arbitrary(weights)[0] if weights else random_model()


def sdpa_attention(q, k, v, key_padding_mask=None, scale=None):
    """The attention as a PyTorch user writes it (flash/efficient SDPA in bf16), for the strongest
    `torch.compile` baseline; the twin computes in fp32 with the N×N matrix."""
    assert key_padding_mask is None
    return F.scaled_dot_product_attention(q, k, v, scale=scale)


def linear_ffn(x, w1, b1, w2, b2=None, *, residual=None, gelu="tanh"):
    """The FFN as two F.linear calls in the run dtype (what compile fuses), not the fp32 twin."""
    y = F.linear(F.gelu(F.linear(x, w1, b1), approximate=gelu), w2, b2)
    return y if residual is None else y + residual


@contextlib.contextmanager
def provider_mode(mode: str):
    """kernels.using(mode); "sdpa": the twins, with attention and FFN as plain PyTorch ops."""
    if mode != "sdpa":
        with kernels.using(mode):
            yield
        return
    from ..models.arbitrary import transfer
    saved = transfer.attention, transfer.ffn
    transfer.attention, transfer.ffn = sdpa_attention, linear_ffn
    try:
        with kernels.using("reference"):
            yield
    finally:
        transfer.attention, transfer.ffn = saved


def providers():
    """name → (model dtype, kernels mode, callable factory(model, code) → fn(x))."""
    def eager(model, code, fused=None):
        return lambda x: model.stylize(x, [(code, 1.0)])

    def compiled(model, code, fused=None):   # the brief's settings: bf16, channels_last, static, reduce-overhead
        fn = torch.compile(model.stylize, mode="reduce-overhead", dynamic=False)
        return lambda x: fn(x, [(code, 1.0)])

    def graphed(model, code, fused):   # the engine's path: the fused forward in one graph
        runner = _GraphRunner(lambda x: fused.stylize(x, [(code, 1.0)]))
        return lambda x: runner(x, (), code)

    return {"eager-fp32": (torch.float32, "reference", eager), "eager-bf16": (torch.bfloat16, "reference", eager),
            "compile-bf16": (torch.bfloat16, "reference", compiled),
            "compile-sdpa-bf16": (torch.bfloat16, "sdpa", compiled), "ours-bf16": (torch.bfloat16, "cuda", graphed)}


def stroke_providers(weights: str | None, painting: torch.Tensor):
    """name → (precision, kernels mode, factory() → fn(x float32 on the device)) of the default
    stroke scale's whole frame (the model at 512 px, resizes and detail restored), as
    `engine.arbitrary.ArbitraryStylizer` runs it; compile-bf16 compiles that whole function."""
    from PIL import Image

    from ..engine.arbitrary import ArbitraryStylizer
    from ..engine.options import StylizeOptions
    image = Image.fromarray(painting[0].permute(1, 2, 0).clamp(0, 255).byte().numpy())

    def engine(precision, backend):
        return ArbitraryStylizer(StylizeOptions(arbitrary_weights=weights, device="cuda", precision=precision,
                                                backend=backend))

    def eager(precision):
        def make():
            e = engine(precision, "reference")
            return lambda x: e.on_device(x, [(image, 1.0)])
        return make

    def compiled():
        e = engine("bf16", "reference")
        styles = [(e.style_code(image), 1.0)]
        fn = torch.compile(lambda x: e._styled(x, styles, 1.0), mode="reduce-overhead", dynamic=False)
        return fn

    def ours():   # bound once, as the media pipeline binds its paintings
        return engine("bf16", "fused").bind([(image, 1.0)]).on_device

    return {"eager-fp32": ("fp32", "reference", eager("fp32")), "eager-bf16": ("bf16", "reference", eager("bf16")),
            "compile-bf16": ("bf16", "reference", compiled), "compile-sdpa-bf16": ("bf16", "sdpa", compiled),
            "ours-bf16": ("bf16", "cuda", ours)}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


@torch.inference_mode()
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", help="arbitrary-style weights (default: random)")
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--providers", nargs="+", default=None)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--stroke", choices=("native", "auto"), default="native",
                        help="native: the model on the whole frame; auto: the default stroke scale's "
                             "whole frame (needs --weights)")
    parser.add_argument("--min-psnr", type=float, default=None,
                        help=f"precision gate against eager-fp32 (default {LOW_PRECISION_MIN_PSNR:g} dB native, "
                             f"{TWO_PASS_MIN_PSNR:g} dB stroke auto)")
    args = parser.parse_args(argv)
    torch.manual_seed(1)
    painting = torch.rand(1, 3, 512, 384) * 255
    if args.stroke == "auto":
        if not args.weights:
            raise SystemExit("--stroke auto needs --weights (the engine loads its model from a file)")
        cases, label, note = _stroke_cases(args.weights, painting), "arbitrary-stroke-auto", "  [stroke auto]"
        min_psnr = TWO_PASS_MIN_PSNR
    else:
        cases, label, note = _native_cases(args.weights, painting), "arbitrary", ""
        min_psnr = LOW_PRECISION_MIN_PSNR
    min_psnr = args.min_psnr if args.min_psnr is not None else min_psnr
    names = args.providers or list(cases)
    _write(_bench({n: cases[n] for n in names}, args.sizes, args.reps, label, note, min_psnr), args.out)
    return 0


def _native_cases(weights: str | None, painting: torch.Tensor) -> dict:
    """name → (dtype label, kernels mode, prepare(x32) → (fn, x)): the model alone, channels_last."""
    def case(dtype, mode, make):
        def prepare(x32):
            base = _model(weights)
            fused = FusedArbitraryNet(base, x32.device, dtype) if mode == "cuda" else None   # from fp32
            model = base.to(x32.device, dtype, memory_format=torch.channels_last)
            fn = make(model, model.encode_style(painting.to(x32.device, dtype)), fused)
            return fn, x32.to(dtype).contiguous(memory_format=torch.channels_last)
        return str(dtype), mode, prepare
    return {name: case(*entry) for name, entry in providers().items()}


def _stroke_cases(weights: str, painting: torch.Tensor) -> dict:
    """The same shape of table for the default stroke scale's whole frame (float32 input)."""
    return {name: (precision, mode, lambda x32, make=make: (make(), x32))
            for name, (precision, mode, make) in stroke_providers(weights, painting).items()}


def _bench(cases: dict, sizes: list[str], reps: int, label: str, note: str,
           min_psnr: float = LOW_PRECISION_MIN_PSNR) -> list[dict]:
    """Each case at each size: gated against the first (eager-fp32) output, then timed; a case
    that fails is reported, never timed."""
    device = torch.device("cuda")
    timer = Timer(device, reps=reps)
    rows = []
    for size in sizes:
        h, w = SIZES[size]
        # A real picture: uniform noise, shrunk to the 512-px stroke size, is nearly flat grey, and
        # bf16 features of a flat image lose most of their relative precision in its normalisation.
        x32 = photo(w, h).to(device)
        reference = None
        for name, (dtype, mode, prepare) in cases.items():
            with provider_mode(mode):
                try:
                    fn, x = prepare(x32)
                    out = fn(x).float()
                except Exception as exc:  # report, never time, a provider that fails
                    print(f"{size:6s} {name:13s} failed: {type(exc).__name__}: {exc}")
                    continue
                if reference is None:
                    reference = out
                quality = psnr(out, reference)
                if name != "eager-fp32" and quality < min_psnr:
                    print(f"{size:6s} {name:13s} gate failed: {quality:.1f} dB vs eager-fp32")
                    continue
                stats = timer.time(fn, [x])
            rows.append({"model": label, "provider": name, "shape": f"1x3x{h}x{w}", "dtype": dtype,
                         "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": _commit(),
                         "median_ms": f"{stats.median_ms:.3f}", "p20_ms": f"{stats.p20_ms:.3f}",
                         "p80_ms": f"{stats.p80_ms:.3f}", "psnr_db": f"{quality:.1f}"})
            print(f"{size:6s} {name:13s} {stats.median_ms:9.2f} ms  (p20 {stats.p20_ms:.2f}, p80 {stats.p80_ms:.2f})"
                  f"  {quality:.1f} dB{note}")
            del fn, x, out
            torch.cuda.empty_cache()
    return rows


def _write(rows: list[dict], out: Path) -> None:
    if rows:
        out.parent.mkdir(parents=True, exist_ok=True)
        new = not out.exists()
        with open(out, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    raise SystemExit(main())
