"""Playground version (never imported by the package): the shipped torch blend with its blurs
as they were at c8d59da — depthwise `conv2d`s (1×K then K×1) for the detail, band and window
blurs, a one-channel `conv2d` (cuDNN) for the feather — the "before" of `media.band_blur`
(batched-GEMM blurs on full-size planes). Everything else is the shipped blend.
`profile_blend.py --versions new,conv` profiles both on the same frames and prints the gap;
`tests/media/test_band_blur.py` holds the two blurs equal.
"""
from __future__ import annotations

from styleforge.media.band_blur import conv_blur
from styleforge.media.temporal_torch import TorchTemporalBlender


class _Conv:
    """`SeparableBlur`'s call, as the depthwise / cuDNN convolution of the same taps."""

    def __init__(self, blur):
        self.taps = blur.taps

    def __call__(self, image):
        return conv_blur(image, self.taps)


class ConvTemporalBlender(TorchTemporalBlender):
    def __post_init__(self):
        super().__post_init__()
        self._feather = _Conv(self._feather)
        for pyramid in (self._detail, getattr(self, "_band", None), getattr(self, "_window", None)):
            if pyramid is not None:
                pyramid.blur = _Conv(pyramid.blur)
