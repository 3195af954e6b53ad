"""Input/output of images (and, in later issues, video and webcam frames)."""
from .image import (
                    ImageError,
                    LoadedImage,
                    format_for,
                    load_image,
                    pil_to_tensor,
                    save_image,
                    tensor_to_pil,
)

__all__ = ["ImageError", "LoadedImage", "format_for", "load_image", "pil_to_tensor", "save_image",
           "tensor_to_pil"]
