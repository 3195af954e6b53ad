"""The end-to-end benchmark's providers: each way of running the style network, set up as its users would.

A provider is built once (`build_provider`) into a `Built`: `prepare` turns the harness's float32
NCHW 0–255 frame into the input the provider reads best (its dtype and memory format), once per
input and outside the timed region; `run` is the exact callable that is timed and whose output is
gated; `describe` reports what the provider chose while it warmed up (the fused engine's plan).
The contract is the same for every provider: input in its preferred form, prepared beforehand;
output in its native dtype and layout, converted to float32 by the gate, after timing. The fused
engine's preferred input is the float32 NCHW frame itself (its first kernel casts and pads on
load) and its output is float32, so those steps are inside its timed region and not inside the
baselines'.

  eager-fp32              the reference model, fp32, NCHW, PyTorch's defaults (the seed's baseline;
                          cuDNN may use TF32: the row's `tf32` column says)
  eager-bf16, eager-fp16  the reference model in that dtype, channels_last
  eager-nchw-bf16/-fp16   the same in NCHW (the faster eager layout of a precision is its baseline)
  compile-<mode>-<p>      torch.compile(model, mode=<mode>, dynamic=False) of the channels_last
                          model in precision <p>; modes default, reduce-overhead, max-autotune
  fused-bf16/fp16/fp32    StyleForge's fused engine (`engine.runner.FusedRunner`)
cuDNN's autotuner (`cudnn.benchmark`) is on for all of them while they run (`autotuned_cudnn`),
as the fused engine has it when it captures. Not here: timing, gating, rows (`endtoend`, `harness`).
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..models.checkpoint import Checkpoint, build_model

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")   # modes whose compiled code replays CUDA graphs


@dataclass(frozen=True)
class Provider:
    name: str
    backend: str            # "eager", "compile" or "fused"
    precision: str          # a DTYPES key
    channels_last: bool = False
    mode: str = ""          # torch.compile mode

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.precision]


def _providers() -> dict[str, Provider]:
    out = {"eager-fp32": Provider("eager-fp32", "eager", "fp32")}
    for p in ("bf16", "fp16"):
        out[f"eager-{p}"] = Provider(f"eager-{p}", "eager", p, channels_last=True)
        # cuDNN's NCHW low-precision kernels beat its channels_last ones at some sizes: a user
        # would keep whichever layout is faster, so both are measured and the faster one counts.
        out[f"eager-nchw-{p}"] = Provider(f"eager-nchw-{p}", "eager", p)
    for mode in COMPILE_MODES:
        for p in ("bf16", "fp16"):
            out[f"compile-{mode}-{p}"] = Provider(f"compile-{mode}-{p}", "compile", p, True, mode)
    for p in ("bf16", "fp16", "fp32"):
        out[f"fused-{p}"] = Provider(f"fused-{p}", "fused", p)
    return out


PROVIDERS = _providers()


def select(spec: str | None, compile_modes: str | None = None) -> list[str]:
    """Provider names from a comma list (default: all), keeping compile providers of `compile_modes`
    (a comma list of COMPILE_MODES; default: all). Unknown names are a ValueError naming them."""
    names = list(PROVIDERS) if not spec else [p.strip() for p in spec.split(",") if p.strip()]
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise ValueError(f"--providers: unknown {', '.join(unknown)} (known: {', '.join(PROVIDERS)})")
    if compile_modes:
        modes = [m.strip() for m in compile_modes.split(",") if m.strip()]
        bad = [m for m in modes if m not in COMPILE_MODES]
        if bad:
            raise ValueError(f"--compile-modes: unknown {', '.join(bad)} (known: {', '.join(COMPILE_MODES)})")
        names = [n for n in names if PROVIDERS[n].backend != "compile" or PROVIDERS[n].mode in modes]
    if not names:
        raise ValueError("no providers left to run")
    return names


def unavailable_reason(provider: Provider, device: torch.device) -> str:
    """Why `provider` cannot run on `device` ("" if it can)."""
    if provider.backend in ("compile", "fused") and device.type != "cuda":
        return f"{provider.name} needs a CUDA device (running on {device.type})"
    if provider.backend == "fused":
        from ..engine.backends import fused_available
        ok, reason = fused_available(device)
        if not ok:
            return f"fused backend unavailable: {reason}"
    return ""


@dataclass
class Built:
    prepare: Callable[[torch.Tensor], torch.Tensor]
    run: Callable[[torch.Tensor], torch.Tensor]
    describe: Callable[[], dict] = field(default=lambda: {})


@contextlib.contextmanager
def autotuned_cudnn():
    """cuDNN times its algorithms per shape, for every provider alike (restored on exit)."""
    saved = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = saved


def build_provider(provider: Provider, checkpoint: Checkpoint, device: torch.device) -> Built:
    model = build_model(checkpoint).eval().requires_grad_(False)
    if provider.backend == "fused":
        from ..engine.runner import FusedRunner
        runner = FusedRunner(model, device, provider.dtype)

        def plan() -> dict:
            chosen = [c for (layer, _), c in runner.layer_choices.items() if layer == "residual"]
            return {"plan": chosen[-1].provider} if chosen else {}
        return Built(lambda x: x.to(device), runner, plan)
    memory_format = torch.channels_last if provider.channels_last else torch.contiguous_format
    model = model.to(device=device, dtype=provider.dtype, memory_format=memory_format)

    def prepare(x: torch.Tensor) -> torch.Tensor:
        return x.to(device=device, dtype=provider.dtype).contiguous(memory_format=memory_format)

    if provider.backend == "eager":
        return Built(prepare, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(model, mode=None if provider.mode == "default" else provider.mode,
                                 dynamic=False)
    if provider.mode not in CUDA_GRAPH_MODES:
        return Built(prepare, compiled)

    def run(x: torch.Tensor) -> torch.Tensor:
        # What torch.compile's docs ask of a loop that calls a CUDA-graph-compiled model: each call
        # starts a new step, so the previous call's output buffer may be reused.
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(x)
    return Built(prepare, run)
