"""The engine: options, backends and the pipeline that runs images through a style."""
from .options import StylizeOptions
from .pipeline import Stylizer

__all__ = ["StylizeOptions", "Stylizer"]
