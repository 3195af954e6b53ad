"""StyleForge's own kernels: ops registered with torch.library, each with a pure-PyTorch twin.

`instance_norm(...)` is the fused InstanceNorm family (statistics, affine, residual, ReLU,
×2 nearest upsample, reflection pad in one write); `conv9x9(...)` the tensor-core kernels of
the network's two 9×9 convolutions (conv1, deconv3) on pre-padded channels_last input.
`use("reference" | "cuda")` and the `using(...)` context manager choose the path for both;
"cuda" (the default) runs the CUDA kernel on CUDA tensors, built just in time on first use
(see `build.py`), and the reference on CPU tensors.
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
from .ops_conv import conv9x9, conv9x9_supported

__all__ = ["MODES", "conv9x9", "conv9x9_supported", "cuda_kernels_available", "current_mode",
           "ensure_cuda_kernels", "instance_norm", "use", "using"]
