"""Deployment files: the style network or the arbitrary-style model as ONNX or an AOTInductor package.

`export_model(ExportOptions(style="candy", format="onnx", output="candy.onnx"))` writes the file
(atomically) and checks it against the engine; `styleforge export` is the command over it.
docs/export.md states the files' contract and how to serve them. Names load on first use (PEP
562), so argument parsing imports `options` without torch.
"""
__all__ = ["ExportOptions", "ExportReport", "export_model"]


def __getattr__(name: str):
    if name == "ExportOptions":
        from .options import ExportOptions
        return ExportOptions
    if name in ("ExportReport", "export_model"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
