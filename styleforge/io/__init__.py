"""Input/output of images (`io.image`) and durable atomic writes (`io.atomic`).

The image names load on first use (PEP 562): `io.atomic` alone (the job plan's writes, a Ray
driver) does not import torch and Pillow's codecs with it.
"""
__all__ = ["ImageError", "LoadedImage", "format_for", "load_image", "pil_to_tensor", "save_image",
           "tensor_to_pil"]


def __getattr__(name: str):
    if name in __all__:
        from . import image
        return getattr(image, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
