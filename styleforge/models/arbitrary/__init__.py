"""The arbitrary-style model: any painting as the style (AdaAttN-like transformer on our ops).

See docs/arbitrary.md. Modules: encoder (frozen VGG16, reflection padded), transfer (the
attention block), decoder, config (no torch), model (the whole network), weights (files), ops (the one import of
the attention/FFN ops).
"""
from .config import ArbitraryConfig

_HOMES = {"ArbitraryStyleNet": "model", "StyleCode": "model", "parameter_counts": "model",
          "ArbitraryWeightsError": "weights", "load_arbitrary": "weights", "save_arbitrary": "weights"}


def __getattr__(name: str):   # the network imports torch; the config (argument parsing) does not
    if name in _HOMES:
        import importlib
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["ArbitraryConfig", "ArbitraryStyleNet", "ArbitraryWeightsError", "StyleCode",
           "load_arbitrary", "parameter_counts", "save_arbitrary"]
