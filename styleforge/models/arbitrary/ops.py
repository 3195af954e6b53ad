"""The one import of styleforge's attention and FFN ops for the arbitrary-style model.

Both entries dispatch by themselves: the CUDA kernels for fp16/bf16 CUDA tensors, the pure-PyTorch
twins on the CPU or under `kernels.use("reference")`. Kept in one module so that a move of the
kernel modules is a one-line change here.
"""
from ...kernels.attention import attention
from ...kernels.ffn import ffn

__all__ = ["attention", "ffn"]
