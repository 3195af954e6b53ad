"""The arbitrary-style model: any painting as the style (AdaAttN-like transformer on our ops).

See docs/arbitrary.md. Modules: encoder (frozen VGG16, reflection padded), transfer (the
attention block), decoder, model (the whole network), weights (files), ops (the one import of
the attention/FFN ops).
"""
from .model import ArbitraryConfig, ArbitraryStyleNet, StyleCode, parameter_counts
from .weights import ArbitraryWeightsError, load_arbitrary, save_arbitrary

__all__ = ["ArbitraryConfig", "ArbitraryStyleNet", "ArbitraryWeightsError", "StyleCode",
           "load_arbitrary", "parameter_counts", "save_arbitrary"]
