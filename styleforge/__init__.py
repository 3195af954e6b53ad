"""StyleForge: fast neural style transfer (Johnson et al. 2016) with fused CUDA kernels.

Library first: `stylize`, `stylize_video`, `load_style`, `list_styles` and `StylizeOptions` are the API; the
`styleforge` command is a thin layer over them.
"""
__version__ = "0.1.0"

from .api import list_styles, load_style, stylize, stylize_video  # noqa: E402
from .engine.options import StylizeOptions  # noqa: E402

__all__ = ["stylize", "stylize_video", "load_style", "list_styles", "StylizeOptions", "__version__"]
