"""Optional dependencies (pip extras) a command needs, checked before any work.

A command that needs PyAV, OpenCV or Gradio says which extra to install in one line instead of
ending in a `ModuleNotFoundError` traceback. Not here: the extras themselves (pyproject.toml).
"""
from __future__ import annotations

import importlib

# import name → (the pip package, the styleforge extra that brings it)
EXTRAS = {"av": ("PyAV", "video"), "cv2": ("OpenCV", "webcam"), "gradio": ("gradio", "web")}


def missing_extra(module: str, what: str) -> str | None:
    """None when `module` imports, else the line that says what to install."""
    try:
        importlib.import_module(module)
    except ImportError:
        package, extra = EXTRAS[module]
        return f'{what} needs {package}, which is not installed: pip install "styleforge[{extra}]"'
    return None
