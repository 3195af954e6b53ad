"""Execution backends for the style network: one model, several ways to run it.

- reference: the plain PyTorch modules (any device, any precision).
- compile:   `torch.compile(mode="reduce-overhead")` of the reference, channels_last (CUDA).
- fused:     our CUDA kernels + cuDNN convolutions + CUDA graphs (`engine.runner`).
`auto` picks fused on CUDA when the kernels are available, reference otherwise.
Precision `auto` is fp16 on CUDA, and on a CPU bf16 where the CPU multiplies bf16 natively
(AVX512-BF16 or AMX-BF16: docs/reliability.md has the speeds and PSNR measured) and oneDNN is
not capped below that ISA (`ONEDNN_MAX_CPU_ISA`), fp32 elsewhere.
fp16 asked for on a CPU runs (emulated, several times slower) with a warning.
A runner maps a float tensor in 0–255, (N, 3, H, W) with H, W multiples of 4, on the runner's
device, to the raw network output in float32 (not clamped).
"""
from __future__ import annotations

import warnings
from typing import Callable

import torch

from ..models.transformer_net import TransformerNet
from ..switches import switches

Runner = Callable[[torch.Tensor], torch.Tensor]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but PyTorch sees no CUDA device")
    return torch.device(name)


class SlowPrecisionWarning(UserWarning):
    """A precision the device can only emulate: it works, much slower than the default."""


# oneDNN's ISA names (ONEDNN_MAX_CPU_ISA) at which it still runs bf16 convolutions natively: from
# AVX512_CORE_BF16 up. The names below it (SSE41 … AVX2_VNNI_2, AVX512_CORE, AVX512_CORE_VNNI)
# leave bf16 emulated. A name not listed here counts as a cap below bf16: fp32 is never the slow choice.
ONEDNN_BF16_ISAS = frozenset({
    "", "ALL", "DEFAULT", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX10_1_512", "AVX512_CORE_AMX",
    "AVX10_1_512_AMX", "AVX512_CORE_AMX_FP16", "AVX10_1_512_AMX_FP16", "AVX10_2_512", "AVX10_2_512_AMX_2",
})


def onednn_allows_bf16(max_cpu_isa: str) -> bool:
    """Whether oneDNN, capped at `max_cpu_isa` ('' when uncapped), may run native bf16 kernels."""
    return max_cpu_isa.strip().upper() in ONEDNN_BF16_ISAS


def cpu_has_native_bf16() -> bool:
    """True where oneDNN runs bf16 convolutions on bf16 hardware (AVX512-BF16 or AMX-BF16).

    Without it bf16 is emulated and slower than fp32. The probes are private torch helpers;
    if a torch version lacks them the answer is False, the safe choice (fp32).
    """
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    try:
        return any(bool(getattr(torch.cpu, name)()) for name in probes if hasattr(torch.cpu, name))
    except RuntimeError:
        return False


def resolve_dtype(precision: str, device: torch.device) -> torch.dtype:
    if precision == "auto":
        if device.type == "cuda":
            # On an H200 the fused fp16 path ran 1.3–1.6× faster than bf16 and landed at 66 dB
            # from fp32 against bf16's 47 dB. The pipeline reruns in fp32 if fp16 ever overflows.
            return torch.float16
        # bf16 stays ≥ 45 dB from fp32 on every shipped style (docs/reliability.md). The CPU's flags
        # are not enough: oneDNN, capped by ONEDNN_MAX_CPU_ISA, would emulate bf16 below its cap.
        native = onednn_allows_bf16(switches().onednn_max_cpu_isa) and cpu_has_native_bf16()
        return torch.bfloat16 if native else torch.float32
    if precision == "fp16" and device.type == "cpu":
        warnings.warn("fp16 on the CPU is emulated and several times slower than fp32; "
                      "use --precision auto (the fastest precision this CPU runs well)",
                      SlowPrecisionWarning, stacklevel=2)
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def fused_available(device: torch.device) -> tuple[bool, str]:
    """(usable, reason) for the fused backend on this device."""
    if device.type != "cuda":
        return False, "the fused backend needs a CUDA device"
    try:
        from ..kernels import dispatch
    except ImportError as exc:  # the kernels package is optional at this layer
        return False, f"kernels unavailable ({exc})"
    return dispatch.cuda_kernels_available()


def resolve_backend(backend: str, device: torch.device, dtype: torch.dtype | None = None) -> str:
    if backend == "auto":
        # fp32 stays on the reference backend: the fused engine's fp32 is exact (no TF32) and
        # 2× slower than PyTorch's TF32 convolutions; fp16/bf16 are where the fused engine wins.
        if dtype == torch.float32:
            return "reference"
        ok, _ = fused_available(device)
        return "fused" if ok else "reference"
    if backend in ("fused", "compile") and device.type != "cuda":
        raise RuntimeError(f"--backend {backend} needs --device cuda")
    if backend == "fused":
        ok, reason = fused_available(device)
        if not ok:
            raise RuntimeError(f"--backend fused is unavailable: {reason}")
    return backend


def make_runner(model: TransformerNet, device: torch.device, dtype: torch.dtype, backend: str) -> Runner:
    model = model.eval().requires_grad_(False)
    if backend == "fused":
        from .runner import FusedRunner
        return FusedRunner(model, device, dtype)
    memory_format = torch.channels_last if device.type == "cuda" else torch.contiguous_format
    model = model.to(device=device, dtype=dtype, memory_format=memory_format)
    forward = model
    if backend == "compile":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            forward = torch.compile(model, mode="reduce-overhead", dynamic=False)

    @torch.inference_mode()
    def run(x: torch.Tensor) -> torch.Tensor:
        x = x.to(device=device, dtype=dtype).contiguous(memory_format=memory_format)
        out = forward(x).float()
        # reduce-overhead replays a CUDA graph that overwrites its output buffer on the next call;
        # .float() already copies a bf16/fp16 result, so only an fp32 one needs its own clone.
        return out.clone() if backend == "compile" and dtype == torch.float32 else out

    return run
