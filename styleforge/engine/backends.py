"""Execution backends for the style network: one model, several ways to run it.

- reference: the plain PyTorch modules (any device, any precision).
- compile:   `torch.compile(mode="reduce-overhead")` of the reference, channels_last (CUDA).
- fused:     our CUDA kernels + cuDNN convolutions + CUDA graphs (`engine.runner`).
- openvino:  the network exported to OpenVINO, INT8 by NNCF or fp32 (`engine.openvino_runner`; CPU).
`auto` picks fused on CUDA when the kernels are available; on a CPU, for precision auto or int8,
openvino INT8 where openvino and nncf are installed (faster than PyTorch on every CPU measured,
docs/cpu.md) and `STYLEFORGE_OPENVINO` is not 0; reference otherwise. An explicit fp32/bf16 on a CPU stays on PyTorch.
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

from ..models.transformer_net import FULL_WIDTH, TransformerNet
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
            # fp16 keeps 3 more mantissa bits than bf16, so it lands closer to fp32 (the bench's
            # PSNR column); the pipeline reruns in fp32 if fp16 ever overflows.
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


OPENVINO_PRECISIONS = {"auto": "int8", "int8": "int8", "fp32": "fp32"}


def wants_openvino(backend: str, precision: str, device: torch.device) -> bool:
    """Whether (backend, precision) on `device` runs on OpenVINO; raises where the pair cannot run."""
    from .openvino_runner import openvino_available
    if backend == "openvino":
        if device.type != "cpu":
            raise RuntimeError("--backend openvino runs on the CPU; use --device cpu")
        if precision not in OPENVINO_PRECISIONS:
            raise RuntimeError(f"--backend openvino runs int8 or fp32, not {precision}")
        ok, reason = openvino_available(OPENVINO_PRECISIONS[precision])
        if not ok:
            raise RuntimeError(f"--backend openvino is unavailable: {reason}")
        return True
    if precision == "int8":
        ok, reason = openvino_available("int8")
        if backend != "auto" or device.type != "cpu" or not ok:
            raise RuntimeError("--precision int8 runs on the OpenVINO backend (CPU): "
                               + (reason or f"not on --backend {backend} / --device {device.type}"))
        return True
    return (backend == "auto" and precision == "auto" and device.type == "cpu" and switches().openvino
            and openvino_available("int8")[0])


def resolve_engine(backend: str, precision: str, device: torch.device) -> tuple[str, torch.dtype, str]:
    """(backend, dtype, precision name) for the options' backend and precision on `device`.

    For openvino the dtype is the runner's input and output (float32) and the name says what it
    computes in (int8 or fp32); for the PyTorch backends the name is the dtype (`torch.float16`).
    """
    if wants_openvino(backend, precision, device):
        return "openvino", torch.float32, OPENVINO_PRECISIONS[precision]
    dtype = resolve_dtype(precision, device)
    return resolve_backend(backend, device, dtype), dtype, str(dtype)


def backend_for_width(backend: str, requested: str, width: int) -> str:
    """The fused engine's kernels are built for the full network's channel counts: a slim network
    runs on the reference backend under `auto`, and an explicit `fused` says why it cannot."""
    if backend != "fused" or width == FULL_WIDTH:
        return backend
    if requested == "auto":
        return "reference"
    raise RuntimeError(f"--backend fused runs the full network only (this one has width {width}); "
                       "use --backend reference or auto")


def resolve_backend(backend: str, device: torch.device, dtype: torch.dtype | None = None) -> str:
    if backend == "openvino":
        wants_openvino(backend, "fp32" if dtype == torch.float32 else "int8", device)
        return backend
    if backend == "auto":
        # fp32 stays on the reference backend: the fused engine's fp32 is exact (no TF32) and
        # slower than PyTorch's TF32 convolutions (the e2e rows); fp16/bf16 are where the fused engine wins.
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


def make_runner(model: TransformerNet, device: torch.device, dtype: torch.dtype, backend: str,
                precision: str = "int8") -> Runner:
    """`precision`: what the openvino backend computes in (int8 or fp32); other backends use `dtype`."""
    model = model.eval().requires_grad_(False)
    if backend == "openvino":
        from .openvino_runner import OpenVINORunner
        return OpenVINORunner(model, precision)
    if backend == "fused":
        from .runner import FusedRunner
        return FusedRunner(model, device, dtype)
    memory_format = torch.channels_last if device.type == "cuda" else torch.contiguous_format
    model = model.to(device=device, dtype=dtype, memory_format=memory_format)
    forward = model
    if backend == "compile":
        from ..kernels import register_ops
        register_ops()   # defined before tracing, so the graph sees the ops, not their registration
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
