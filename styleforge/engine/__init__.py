"""The engine: options, backends and the pipeline that runs images through a style.

`Stylizer` loads on first use, so the options (read by the CLI's parsers) come without torch.
"""
from .options import StylizeOptions

__all__ = ["StylizeOptions", "Stylizer"]


def __getattr__(name: str):
    if name == "Stylizer":
        from .pipeline import Stylizer
        return Stylizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
