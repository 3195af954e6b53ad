"""Options of the media pipeline and of video output (every `stylize`/`video` flag is a field).

What the engine computes lives in `engine.options.StylizeOptions`; these say how media flows
through it (worker threads, queue depth, which image codec) and how a video is written.
"""
from __future__ import annotations

from dataclasses import dataclass

CODECS = ("auto", "pillow", "gpu")   # image codecs (media.codecs); here so parsing needs no torch
VIDEO_CODECS = {"h264": "libx264", "h265": "libx265", "av1": "libsvtav1", "vp9": "libvpx-vp9"}
# What each container takes (FFmpeg's muxers refuse the rest only after the encoder is open), and
# what "auto" picks there: the first of these that this PyAV build can encode.
CONTAINER_CODECS = {"mp4": ("h264", "h265", "av1", "vp9"), "mov": ("h264", "h265"),
                    "matroska": ("h264", "h265", "av1", "vp9"), "webm": ("av1", "vp9"),
                    "avi": ("h264", "av1", "vp9")}
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
                "veryslow", "placebo")
SVTAV1_PRESETS = tuple(str(n) for n in range(-1, 14))
# `--temporal`'s strength when given bare. Nearly all of the warping error left after the blend
# sits in the band finer than σ, which α hardly touches, while the style lost grows with how long
# strokes are averaged (≈ 1/(1 − α) frames): 0.9 keeps more style than 0.95 at the same warping
# error (the 1080p CPU sweep in docs/temporal.md); here so parsing needs no OpenCV.
TEMPORAL_STRENGTH = 0.9
# The blend's detail σ in px at the network's scale (TemporalSettings.detail_sigma): it sets how
# much of the flickering fine band is blended, so it buys the warping error that α 0.9 and the
# 0.5σ energy window give up: 0.7 is the largest that kept the scene-cut clip under 0.6× on the
# device (0.75: 0.629×; docs/temporal.md).
TEMPORAL_DETAIL_SIGMA = 0.7
# The blend's pair flows (docs/temporal.md): "dis" is OpenCV's DIS on the CPU, in the decode
# workers (every device); "torch" is `flow_torch`'s Lucas–Kanade on the engine's GPU (CUDA runs
# only: a CPU run keeps DIS). DIS stays the default until a device run shows the GPU flow keeps
# the quality bars at a better rate. Presets are `flow.PRESETS`' names, here so parsing needs no
# OpenCV; fast at 640 px kept issue 40's bars on every bench clip.
TEMPORAL_FLOWS = ("dis", "torch")
TEMPORAL_FLOW_PRESETS = ("ultrafast", "fast", "medium")
TEMPORAL_FLOW_PRESET = "fast"
TEMPORAL_FLOW_SIZE = 640
# OpenCV threads per DIS call. The decode workers already run pairs in parallel; DIS spread over
# every core as well oversubscribes them and slows the engine's thread (H200 host, 16 cores,
# 1080p: 0.60× plain frames/s with OpenCV's own count, 0.76× with one; docs/temporal.md).
TEMPORAL_FLOW_THREADS = 1
# Whether the blend computes the forward flow too, for the forward–backward occlusion test.
# Off by default: the backward flow alone is half the DIS time, and the H200 (1080p, five clips,
# candy) kept 0.72–0.83× plain frames/s where both flows left the moving subject at 0.68×; the
# motion-boundary, inside-the-frame and photometric tests then decide trust, and the carried
# frame weighs TEMPORAL_UNCHECKED_TRUST × α (docs/temporal.md).
TEMPORAL_FLOW_CHECK = False
# × α for a blend whose trust rests on the backward flow alone. On the H200's 1080p sweep (16
# frames per clip) 0.94 kept every clip inside both quality bars (warping error 0.435–0.592×,
# style change −1.4 to +8.8 %); 1 put the cut at +10.2 %, 8/9 the zoom at 0.620×.
TEMPORAL_UNCHECKED_TRUST = 0.94
PRESETS = {"h264": X264_PRESETS, "h265": X264_PRESETS, "av1": SVTAV1_PRESETS, "vp9": ()}
# The preset when none is given. x264's own default (medium) encodes 1080p far below the
# engine's rate; superfast keeps CABAC and deblocking (unlike ultrafast), and through the whole
# transcode it was no slower than veryfast.
DEFAULT_PRESETS = {"h264": "superfast", "h265": "superfast"}
# Video decoders: FFmpeg's CPU decoders, or NVIDIA's NVDEC through FFmpeg's CUDA hwaccel. cpu is the
# default: on a 16-core host NVDEC made every case slower, because PyAV copies each frame to the
# host holding the GIL, one frame at a time. cuda is there for hosts whose cores the encoder needs more.
VIDEO_DECODERS = ("cpu", "cuda")


@dataclass(frozen=True)
class PipelineOptions:
    workers: int | None = None     # decode and encode threads each; None: one per CPU, ≤ 16
    depth: int = 16                # items queued between two stages (bounds memory)
    codec: str = "auto"            # image codec: auto (nvJPEG on CUDA where usable), pillow, gpu

    def __post_init__(self):
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be ≥ 1, got {self.workers}")
        if self.depth < 1:
            raise ValueError(f"depth must be ≥ 1, got {self.depth}")
        if self.codec not in CODECS:
            raise ValueError(f"codec must be one of {CODECS}, got {self.codec!r}")


@dataclass(frozen=True)
class VideoOptions:
    codec: str = "auto"            # VIDEO_CODECS, or auto: h264, or what the container takes
    crf: int | None = None         # the encoder's quality scale; None: its default
    preset: str | None = None      # the encoder's speed preset, e.g. "fast"; None: DEFAULT_PRESETS
    start: float = 0.0             # seconds into the input to begin
    duration: float | None = None  # seconds to keep; None: to the end
    temporal: float = 0.0          # flow-warped blend of the previous output (media.temporal); 0: off
    temporal_flow: str = "dis"     # TEMPORAL_FLOWS: where the blend's pair flows are computed
    temporal_flow_preset: str = TEMPORAL_FLOW_PRESET   # DIS preset (the "dis" flows)
    temporal_flow_size: int = TEMPORAL_FLOW_SIZE       # px: flows on the luma shrunk to this longer side
    temporal_flow_threads: int | None = TEMPORAL_FLOW_THREADS   # OpenCV threads while DIS runs (None: OpenCV's own)
    temporal_flow_check: bool = TEMPORAL_FLOW_CHECK   # forward flow + forward–backward test; False: backward flow only
    decoder: str = "cpu"           # VIDEO_DECODERS
    max_seconds: float | None = None  # refuse inputs longer than this, counted while decoding
    pipeline: PipelineOptions = PipelineOptions()

    def __post_init__(self):
        if self.codec != "auto" and self.codec not in VIDEO_CODECS:
            raise ValueError(f"video codec must be auto or one of {tuple(VIDEO_CODECS)}, got {self.codec!r}")
        if self.preset is not None and self.codec != "auto":
            check_preset(self.codec, self.preset)
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError(f"max_seconds must be > 0, got {self.max_seconds}")
        if self.crf is not None and not 0 <= self.crf <= 63:
            raise ValueError(f"crf must be in 0..63, got {self.crf}")
        if self.start < 0:
            raise ValueError(f"start must be ≥ 0 seconds, got {self.start}")
        if self.duration is not None and self.duration <= 0:
            raise ValueError(f"duration must be > 0 seconds, got {self.duration}")
        if self.decoder not in VIDEO_DECODERS:
            raise ValueError(f"video decoder must be one of {VIDEO_DECODERS}, got {self.decoder!r}")
        if not 0.0 <= self.temporal < 1.0:
            raise ValueError(f"temporal strength must be in [0, 1), got {self.temporal}")
        if self.temporal_flow not in TEMPORAL_FLOWS:
            raise ValueError(f"temporal flow must be one of {TEMPORAL_FLOWS}, got {self.temporal_flow!r}")
        if self.temporal_flow_preset not in TEMPORAL_FLOW_PRESETS:
            raise ValueError(f"temporal flow preset must be one of {TEMPORAL_FLOW_PRESETS}, "
                             f"got {self.temporal_flow_preset!r}")
        if self.temporal_flow_size < 16:
            raise ValueError(f"temporal flow size must be ≥ 16 px, got {self.temporal_flow_size}")
        if self.temporal_flow_threads is not None and self.temporal_flow_threads < 1:
            raise ValueError(f"temporal flow threads must be ≥ 1, got {self.temporal_flow_threads}")


def check_preset(codec: str, preset: str) -> None:
    """ValueError unless the encoder of `codec` knows `preset` (FFmpeg would fail mid-open
    with "Invalid argument", which reads like a broken input)."""
    known = PRESETS[codec]
    if not known:
        raise ValueError(f"--preset: the {codec} encoder takes no preset; leave it out")
    if preset not in known:
        raise ValueError(f"--preset {preset!r} is not a {codec} preset; use one of {', '.join(known)}")
