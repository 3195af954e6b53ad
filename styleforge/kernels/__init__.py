"""StyleForge's own kernels: ops registered with torch.library, each with a pure-PyTorch twin.

`instance_norm(...)` is the fused InstanceNorm family (statistics, affine, residual, ReLU,
×2 nearest upsample, reflection pad in one write). `use("reference" | "cuda")` and the
`using(...)` context manager choose the path; "cuda" (the default) runs the CUDA kernel on CUDA
tensors, built just in time on first use (see `build.py`), and the reference on CPU tensors.
Importing this package compiles nothing.
"""
from .ops import (
    MODES,
    cuda_kernels_available,
    current_mode,
    ensure_cuda_kernels,
    instance_norm,
    use,
    using,
)

__all__ = ["MODES", "cuda_kernels_available", "current_mode", "ensure_cuda_kernels", "instance_norm",
           "use", "using"]
