"""Guards at the engine's edges: images with pixels in, finite numbers in, finite numbers out.

A NaN anywhere in a convolution's input spreads to the whole output through InstanceNorm's
mean, so one bad pixel would silently make a black image; and a damaged style can produce
NaN from good pixels. These checks turn both into errors that say what to do. They do not
decide anything about precision (the pipeline reruns fp16 overflow in fp32 before this runs).
"""
from __future__ import annotations

import torch


class NonFiniteOutputError(RuntimeError):
    """The network produced NaN or inf; the message names the style and what to try."""


def require_pixels(height: int, width: int, source: str = "image") -> None:
    if height < 1 or width < 1:
        raise ValueError(f"{source} has no pixels ({width}×{height}); give an image at least 1×1")


def require_finite_input(tensor: torch.Tensor, source: str = "image") -> None:
    """Float pixels must be finite (uint8 always are)."""
    if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
        bad = int((~torch.isfinite(tensor)).sum())
        raise ValueError(f"{source} holds {bad} NaN or inf values; replace them (e.g. "
                         "numpy.nan_to_num) before stylizing")


def non_finite_output(style: str) -> NonFiniteOutputError:
    """The error for a style whose output is not finite (raised here, or by a caller that read a
    device flag late)."""
    return NonFiniteOutputError(f"style {style}: the stylized image holds NaN or inf values; its "
                                "weights are likely damaged: try another style or --precision fp32")


def require_finite_output(tensor: torch.Tensor, style: str) -> None:
    # A sum (no temporaries) is finite when every element is; isfinite() on the whole image made
    # full-size temporaries (17 B/px on a CPU). Only a sum that overflowed needs the exact test.
    if not bool(torch.isfinite(tensor.sum())) and not bool(torch.isfinite(tensor).all()):
        raise non_finite_output(style)
