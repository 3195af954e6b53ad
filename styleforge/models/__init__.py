"""Models: the Johnson et al. style network, its blocks, checkpoints and the style registry.

Names load on first use (PEP 562): argument parsing imports model configs without torch.
"""
__all__ = ["TransformerNet", "count_flops"]


def __getattr__(name: str):
    if name in __all__:
        from . import transformer_net
        return getattr(transformer_net, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
