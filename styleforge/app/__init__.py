"""The web app behind `styleforge serve`: Gradio Blocks over the library (`pip install "styleforge[web]"`).

Modules: options (ServeOptions, every CLI flag), files (the app's temp folder, upload checks,
safe names), gallery (style thumbnails), handlers (events → library calls), training_job (the
background training run), layout (the Blocks), server (launch and graceful shutdown). Importing
this package is cheap: gradio is imported only when the app is built.
"""
from .options import ServeOptions

__all__ = ["ServeOptions", "serve"]


def serve(options: ServeOptions, **kwargs) -> None:
    from .server import serve as _serve
    _serve(options, **kwargs)
