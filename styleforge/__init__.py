"""StyleForge: fast neural style transfer (Johnson et al. 2016) with fused CUDA kernels.

Library first: `stylize`, `stylize_files`, `stylize_video`, `load_style`, `list_styles` and `StylizeOptions` are the
API; the `styleforge` command is a thin layer over them. The names load on first use (PEP 562), so
`import styleforge.cli` and `styleforge --help` do not import torch.
"""
__version__ = "0.1.0"

__all__ = ["stylize", "stylize_files", "stylize_video", "load_style", "list_styles", "StylizeOptions", "__version__"]
_HOMES = {"stylize": "api", "stylize_files": "api", "stylize_video": "api", "load_style": "api", "list_styles": "api",
          "StylizeOptions": "engine.options"}


def __getattr__(name: str):
    import importlib
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    if not name.startswith("_"):   # a submodule, e.g. help(styleforge.api) after `import styleforge`
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
