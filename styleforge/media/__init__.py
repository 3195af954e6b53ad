"""StyleForge's media layer: the streaming pipeline and its image and video sources and sinks.

`stream` is the generic pipeline (bounded queues, ordered output, one bad item fails alone);
`stylize_images` runs image files and stdin/stdout through it; `stylize_video` runs a video.
`temporal` (OpenCV), `temporal_torch` (GPU), `flow_ahead`, `flow` and `warping_error` keep video
steady; `camera` drives `styleforge webcam`.
Importing this package is cheap: PyAV loads only when a video is opened.
"""
from __future__ import annotations

from .options import PipelineOptions, VideoOptions
from .records import Record

__all__ = ["PipelineOptions", "VideoOptions", "Item", "Stats", "Record", "stream",
           "stylize_images", "ImageJob", "stylize_video", "VideoError"]


def __getattr__(name: str):
    if name in ("Item", "Stats", "stream"):   # the pipeline imports torch: only when used
        from . import pipeline
        return getattr(pipeline, name)
    if name in ("stylize_images", "ImageJob"):
        from . import images
        return getattr(images, name)
    if name in ("stylize_video", "VideoError"):
        from . import video
        return getattr(video, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
