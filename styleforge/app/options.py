"""`ServeOptions`: every setting of `styleforge serve` (each CLI flag is a field), checked once.

Limits are enforced twice on purpose: Gradio refuses uploads over `max_upload_bytes` at the
upload route, and the handlers re-check bytes, pixels and video length before any decoding, so a
client that talks to the API directly meets the same limits. Not here: the layout (`layout.py`)
or starting the server (`server.py`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.options import StylizeOptions

LOCALHOST = "127.0.0.1"


@dataclass(frozen=True)
class ServeOptions:
    host: str = LOCALHOST                   # localhost unless told otherwise
    port: int = 7860
    device: str = "auto"
    precision: str = "auto"
    backend: str = "auto"
    max_upload_bytes: int = 25 * 1024 * 1024
    max_pixels: int = 4096 * 4096           # per image, checked from the header before decoding
    max_video_seconds: float = 30.0
    webcam_max_side: int = 480              # live frames are downscaled to this for latency
    concurrency: int | None = None          # engine events at once; None = sized to the device
    temp_dir: str | None = None             # None = a fresh folder, removed at shutdown
    vgg_weights: str | None = None          # training tab: torchvision-key VGG16 file
    train_content_dir: str | None = None    # training tab: folder of content photos
    train_steps: int = 2000                 # training tab: default steps of a job

    def __post_init__(self):
        for name in ("max_upload_bytes", "max_pixels", "webcam_max_side", "train_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be ≥ 1, got {getattr(self, name)}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if self.max_video_seconds <= 0:
            raise ValueError(f"max_video_seconds must be > 0, got {self.max_video_seconds}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"concurrency must be ≥ 1, got {self.concurrency}")
        # The engine's own rules for these three, checked now rather than at the first request.
        StylizeOptions(device=self.device, precision=self.precision, backend=self.backend)


def engine_concurrency(options: ServeOptions, device_type: str) -> int:
    """How many engine events run at once: one per GPU (a second would only queue on the
    device and share its CUDA graphs' static buffers), two on a CPU (torch already uses every
    core inside one call; a second hides the request's decode/encode time)."""
    if options.concurrency is not None:
        return options.concurrency
    return 1 if device_type == "cuda" else 2
