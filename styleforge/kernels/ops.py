"""`torch.ops.styleforge.instance_norm`: schema, reference/fake/autograd registrations, and the
Python entry with its reference|cuda switch.

Why the schema lives here and not in a C++ `TORCH_LIBRARY` block (STYLE.md's anchor,
pytorch/extension-cpp, puts it there): the C++ library exists only after a successful nvcc
build, but CPU-only installs (CI, laptops) still need the op for the reference path,
`torch.library.opcheck`, `torch.compile` and export. Defining the schema once in Python gives
every install the same op; `csrc/bindings.cpp` only adds the CUDA kernel with
`TORCH_LIBRARY_IMPL(styleforge, CUDA, m)`, which the dispatcher accepts for a Python-defined
schema. The pure-PyTorch twin is registered as `CompositeExplicitAutograd`: it serves CPU and,
until (or unless) the CUDA kernels load, CUDA too; a kernel registered for the CUDA key takes
precedence over it, so loading the extension needs no re-registration.
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

import torch

from . import reference
from .library import backward_through_reference, define_once

SCHEMA = ("instance_norm(Tensor x, Tensor? weight, Tensor? bias, Tensor? residual, float eps, "
          "bool relu, int pad, int upsample) -> Tensor")
QUALNAME = "styleforge::instance_norm"
MODES = ("reference", "cuda")

_LIB, _FIRST_IMPORT = define_once(SCHEMA)  # registrations below run only when this defined it


def _instance_norm_impl(x, weight, bias, residual, eps, relu, pad, upsample):
    return reference.instance_norm(x, weight, bias, residual, eps, relu, pad, upsample)


def _instance_norm_fake(x, weight, bias, residual, eps, relu, pad, upsample):
    reference.check_args(x, weight, bias, residual, eps, pad, upsample)
    memory_format = torch.channels_last if reference.output_channels_last(x) else torch.contiguous_format
    return torch.empty(reference.output_shape(x, pad, upsample), dtype=x.dtype, device=x.device,
                       memory_format=memory_format)


def _setup_context(ctx, inputs, output):
    x, weight, bias, residual, eps, relu, pad, upsample = inputs
    ctx.save_for_backward(x, weight, bias, residual)
    ctx.options = (eps, relu, pad, upsample)


def _backward(ctx, grad):
    """Gradients by differentiating the reference twin (recomputes the forward; correct, not fast)."""
    eps, relu, pad, upsample = ctx.options
    return backward_through_reference(
        lambda x, weight, bias, residual: reference.instance_norm(x, weight, bias, residual, eps, relu, pad, upsample),
        ctx.saved_tensors, ctx.needs_input_grad, grad, num_inputs=8)


if _FIRST_IMPORT:
    _LIB.impl("instance_norm", _instance_norm_impl, "CompositeExplicitAutograd")
    torch.library.register_fake(QUALNAME, _instance_norm_fake, lib=_LIB)
    torch.library.register_autograd(QUALNAME, _backward, setup_context=_setup_context, lib=_LIB)


# ---- loading the CUDA kernels ---------------------------------------------------------------

_load_lock = threading.Lock()
_cuda_state: tuple[bool, str] | None = None   # (loaded, where or why not), once tried


def ensure_cuda_kernels() -> tuple[bool, str]:
    """Build (first use, cached) and load the CUDA kernels once per process; never raises.

    On failure the reference twin keeps serving CUDA tensors and a warning says so, once.
    """
    global _cuda_state
    if _cuda_state is not None:
        return _cuda_state
    with _load_lock:
        if _cuda_state is None:
            if not torch.cuda.is_available():
                _cuda_state = (False, "PyTorch sees no CUDA device")
            else:
                from . import build
                try:
                    path = build.build_and_load()
                    _cuda_state = (True, str(path))
                except Exception as exc:  # nvcc, ninja, the compiler and the loader all raise differently
                    reason = f"building the StyleForge CUDA kernels failed: {exc}"
                    warnings.warn(f"{reason.splitlines()[0]} — the PyTorch reference implementation runs "
                                  "instead (slower). `styleforge build --verbose` shows the full log.",
                                  RuntimeWarning, stacklevel=2)
                    _cuda_state = (False, reason)
    return _cuda_state


def cuda_kernels_available() -> tuple[bool, str]:
    """(usable, reason): whether the CUDA kernels are built and loaded in this process."""
    return ensure_cuda_kernels()


# ---- the Python entry and the reference|cuda switch -------------------------------------------

_mode = "cuda"


def use(mode: str) -> None:
    """Route `instance_norm` through the pure-PyTorch twin ("reference") or the op ("cuda").

    "cuda" calls `torch.ops.styleforge.instance_norm`, which runs the CUDA kernel on CUDA
    tensors (building it on first use) and the reference on CPU tensors.
    """
    global _mode
    if mode not in MODES:
        raise ValueError(f"kernels.use: mode must be one of {MODES}, got {mode!r}")
    _mode = mode


def current_mode() -> str:
    return _mode


@contextlib.contextmanager
def using(mode: str) -> Iterator[None]:
    previous = _mode
    use(mode)
    try:
        yield
    finally:
        use(previous)


def instance_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                  *, residual: torch.Tensor | None = None, eps: float = 1e-5, relu: bool = False,
                  pad: int = 0, upsample: int = 1) -> torch.Tensor:
    """Fused InstanceNorm: normalise, affine, + residual, ReLU, ×upsample, reflection pad.

    x: (N, C, H, W) fp32/fp16/bf16, NCHW or channels_last → (N, C, H·u + 2·pad, W·u + 2·pad)
    in x's dtype and memory format. See `reference.instance_norm` for the exact semantics.
    """
    if _mode == "reference":
        return reference.instance_norm(x, weight, bias, residual, eps, relu, pad, upsample)
    if x.is_cuda and _cuda_state is None:
        ensure_cuda_kernels()
    return torch.ops.styleforge.instance_norm(x, weight, bias, residual, float(eps), bool(relu),
                                              int(pad), int(upsample))
