"""Models: the Johnson et al. style network, its blocks, checkpoints and the style registry."""
from .transformer_net import TransformerNet, count_flops

__all__ = ["TransformerNet", "count_flops"]
