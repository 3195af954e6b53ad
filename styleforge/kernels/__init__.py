"""StyleForge's own kernels: ops registered with torch.library, each with a pure-PyTorch twin.

One module per op, the same name everywhere (`<op>.py` here: schema, fake impl, autograd, Python
entry; `reference/<op>.py`: the twin; `tests/kernels/test_<op>.py`; `bench/op_<op>.py`):
`instance_norm(...)` is the fused InstanceNorm family (statistics, affine, residual, ReLU,
×2 nearest upsample, reflection pad in one write); `conv9x9(...)` the tensor-core kernels of
the network's two 9×9 convolutions (conv1, deconv3) on pre-padded channels_last input;
(`pack_conv1_weight`, `pack_head_weight`: their weights in the kernels' shared-memory layout, made
once, which conv9x9_norm and conv9x9_from_sums take as packed_weight);
`conv3x3_norm(...)` the residual blocks' 3×3 convolution with the InstanceNorms fused around it
(Hopper), and `norm_scale_shift(...)` the hand-off into it;
`attention(...)` flash-style attention (fp16/bf16 tensor cores, key padding mask);
`ffn(...)` the transformer feed-forward block (Linear → GELU → Linear + residual) on cuBLASLt epilogues;
`feature_pad`, `norm_affine`, `adaattn_stats`, `detail_upscale` (`arbitrary_glue.py`) the
arbitrary-style model's glue between cuDNN convolutions and the attention/FFN kernels.
`use("reference" | "cuda")` and the `using(...)` context manager (`dispatch.py`) choose the path
for all; "cuda" (the default) runs the CUDA kernel on CUDA tensors, built just in time on first
use (see `build.py`), and the reference on CPU tensors.
Importing this package compiles and registers nothing: `register_ops()` defines the ops where one
may first be called (`library.py` says where). The package exports each op's entry under the op's name,
which hides the module of that name as an attribute: import module internals by their full name
(`from styleforge.kernels.conv9x9 import conv9x9_supported`).
"""
from .arbitrary_glue import adaattn_stats, detail_upscale, feature_pad, norm_affine
from .attention import attention
from .conv3x3 import (
    chain_state,
    conv3x3_norm,
    conv3x3_norm_supported,
    conv3x3_residual_chain,
    norm_scale_shift,
    norm_state,
    pack_weight,
)
from .conv9x9 import (
    conv9x9,
    conv9x9_from_sums,
    conv9x9_norm,
    conv9x9_supported,
    pack_conv1_weight,
    pack_head_weight,
)
from .dispatch import MODES, cuda_kernels_available, current_mode, ensure_cuda_kernels, use, using
from .ffn import ffn
from .instance_norm import instance_norm
from .library import register_ops

__all__ = ["MODES", "adaattn_stats", "attention", "chain_state", "conv3x3_norm", "conv3x3_norm_supported",
           "conv3x3_residual_chain",
           "conv9x9", "conv9x9_from_sums", "conv9x9_norm", "conv9x9_supported", "cuda_kernels_available",
           "current_mode", "detail_upscale", "ensure_cuda_kernels", "feature_pad", "ffn", "instance_norm",
           "norm_affine", "norm_scale_shift", "norm_state", "register_ops",
           "pack_conv1_weight", "pack_head_weight", "pack_weight", "use", "using"]
