"""`torch.ops.styleforge.ffn`: schema, registrations, the fused cuBLASLt path, and the Python entry.

y = gelu(x·w1ᵀ + b1)·w2ᵀ + b2 + residual (see `reference/<op>.py`). The CUDA impl is two GEMMs
whose epilogues do the elementwise work, both through PyTorch's own cuBLASLt wrappers rather than
our C++: in `aten/src/ATen/native/cuda/Blas.cpp`, `torch._addmm_activation(b1, x, w1ᵀ,
use_gelu=True)` with a contiguous 1-D bias, contiguous output and both matrix dims > 1 passes
`isInputCompliesAddmmCudaLt` and runs `gemm_and_bias` with CUBLASLT_EPILOGUE_GELU_BIAS (tanh
GELU); `c.addmm_(hidden, w2ᵀ)` with c = residual + b2 runs the GEMM with C = c, β = 1, so the
residual is read in GEMM 2's epilogue (a 1-D b2 alone goes through CUBLASLT_EPILOGUE_BIAS).
The hidden activation (T × 4d, the big tensor) is thus written once and read once; eager
F.linear → F.gelu → F.linear + residual writes and reads it twice. Costs we accept: "erf" GELU
has no cuBLASLt epilogue, so GEMM 1 uses the BIAS epilogue and one in-place erf-GELU pass
follows (only for "erf"); residual + b2 is one T × d elementwise pass (T × d is 1/4 of the
hidden). Why not our own cuBLASLt C++ (bindings_ffn.cpp): it must link libcublasLt from the JIT
extension, which cannot be built or even compiled on our CPU-only CI, while this path runs the
same epilogues, needs no nvcc, and works wherever PyTorch's CUDA build does.
fp32: "ieee" (default) is exact fp32; fp32_precision="tf32" is the opt-in fast path (TF32 tensor
cores, fp32 accumulate), set through PyTorch's matmul-precision flag for the two GEMMs and
restored after (a process-global flag: not thread-safe against other threads' fp32 matmuls).
Its error: ≈ 2.2e-4 relative L2 vs float64 in a CPU model of TF32 rounding, bound 2e-3
(tests/test_kernels_ffn.py, whose GPU test measures the real path against the same bound).
Autograd differentiates the twin (recomputes the forward; correct, not fast).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from . import dispatch
from .library import backward_through_reference, define_once, register_ops, registration
from .reference import ffn as reference

SCHEMA = ("ffn(Tensor x, Tensor w1, Tensor? b1, Tensor w2, Tensor? b2, Tensor? residual, str gelu, "
          "str fp32_precision='ieee') -> Tensor")
QUALNAME = "styleforge::ffn"

@contextlib.contextmanager
def matmul_precision(dtype: torch.dtype, fp32_precision: str) -> Iterator[None]:
    """fp32 matmuls run as `fp32_precision` inside; the caller's setting is restored after.

    Uses whichever of PyTorch's two TF32 APIs the process already uses: reading the legacy one
    after the new one was set raises ("mix of the legacy and new APIs").
    """
    if dtype != torch.float32:
        yield
        return
    tf32 = fp32_precision == "tf32"
    try:
        previous = torch.get_float32_matmul_precision()
        want = "high" if tf32 else "highest"
        setter = torch.set_float32_matmul_precision
    except RuntimeError:
        previous = torch.backends.cuda.matmul.fp32_precision
        want = "tf32" if tf32 else "ieee"

        def setter(value: str) -> None:
            torch.backends.cuda.matmul.fp32_precision = value
    if previous == want:
        yield
        return
    setter(want)
    try:
        yield
    finally:
        setter(previous)


def has_gelu_epilogue(x: torch.Tensor) -> bool:
    """Whether `_addmm_activation(use_gelu=True)` computes tanh GELU here (CUDA's cuBLASLt epilogue
    and its fallback do; the CPU kernel computes erf GELU instead, so CPU takes addmm + gelu_)."""
    return x.is_cuda


def fused_ffn(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor | None, w2: torch.Tensor,
              b2: torch.Tensor | None, residual: torch.Tensor | None, gelu: str,
              fp32_precision: str = "ieee") -> torch.Tensor:
    """The two-GEMM composition the module docstring describes; device-agnostic ATen calls.

    On CUDA each GEMM call below is one cuBLASLt/cuBLAS GEMM with its epilogue; on CPU the same
    code runs (unfused) so CI checks the plumbing: transposes, flattening, the in-place residual.
    """
    reference.check_args(x, w1, b1, w2, b2, residual, gelu, fp32_precision)
    shape, d, h = x.shape, x.shape[-1], w1.shape[0]
    x2 = x.reshape(-1, d)                                      # (T, d)
    if x2.shape[0] == 0:
        return x.new_empty(shape)
    with matmul_precision(x.dtype, fp32_precision):
        if gelu == "tanh" and has_gelu_epilogue(x):
            bias1 = b1 if b1 is not None else x.new_zeros(h)   # GELU_BIAS needs a bias vector
            hidden = torch._addmm_activation(bias1.contiguous(), x2, w1.t(), use_gelu=True)
        else:
            hidden = torch.mm(x2, w1.t()) if b1 is None else torch.addmm(b1.contiguous(), x2, w1.t())
            if gelu != "none":                                 # no cuBLASLt epilogue: one more pass
                torch.ops.aten.gelu_(hidden, approximate=gelu if gelu == "tanh" else "none")
        if residual is not None:                               # C = residual (+ b2), β = 1, in place
            r2 = residual.reshape(-1, d)
            acc = r2 + b2 if b2 is not None else r2.clone(memory_format=torch.contiguous_format)
            y = acc.addmm_(hidden, w2.t())
        elif b2 is not None:
            y = torch.addmm(b2.contiguous(), hidden, w2.t())
        else:
            y = torch.mm(hidden, w2.t())
    return y.reshape(shape)


def _ffn_impl(x, w1, b1, w2, b2, residual, gelu, fp32_precision="ieee"):
    return reference.ffn(x, w1, b1, w2, b2, residual, gelu, fp32_precision)


def _ffn_cuda(x, w1, b1, w2, b2, residual, gelu, fp32_precision="ieee"):
    return fused_ffn(x, w1, b1, w2, b2, residual, gelu, fp32_precision)


def _ffn_fake(x, w1, b1, w2, b2, residual, gelu, fp32_precision="ieee"):
    reference.check_args(x, w1, b1, w2, b2, residual, gelu, fp32_precision)
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _setup_context(ctx, inputs, output):
    x, w1, b1, w2, b2, residual, gelu, _ = inputs
    ctx.save_for_backward(x, w1, b1, w2, b2, residual)
    ctx.gelu = gelu


def _backward(ctx, grad):
    return backward_through_reference(
        lambda *tensors: reference.ffn(*tensors, ctx.gelu),
        ctx.saved_tensors, ctx.needs_input_grad, grad, num_inputs=8)


@registration
def _register() -> None:
    lib, first = define_once(SCHEMA)
    if first:
        lib.impl("ffn", _ffn_impl, "CompositeExplicitAutograd")
        lib.impl("ffn", _ffn_cuda, "CUDA")
        torch.library.register_fake(QUALNAME, _ffn_fake, lib=lib)
        torch.library.register_autograd(QUALNAME, _backward, setup_context=_setup_context, lib=lib)


def ffn(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor | None, w2: torch.Tensor,
        b2: torch.Tensor | None = None, *, residual: torch.Tensor | None = None, gelu: str = "tanh",
        fp32_precision: str = "ieee") -> torch.Tensor:
    """Fused feed-forward: gelu(x·w1ᵀ + b1)·w2ᵀ + b2 + residual, x (..., d) → (..., d) in x's dtype.

    w1 (h, d), w2 (d, h) as nn.Linear stores them; gelu "tanh" | "erf" | "none"; fp32 inputs run
    exact fp32 unless fp32_precision="tf32". Under `kernels.use("reference")` the twin runs.
    """
    if dispatch.current_mode() == "reference":
        return reference.ffn(x, w1, b1, w2, b2, residual, gelu, fp32_precision)
    register_ops()
    return torch.ops.styleforge.ffn(x, w1, b1, w2, b2, residual, gelu, fp32_precision)
