"""A video transcode's two ends set up: the request checked, the input opened, the output's video
stream configured. The frame loop between them is `media.video`.

`check_request` refuses, before any work, what cannot succeed: an unknown suffix, a codec the
container cannot hold (`resolve_codec`: when not named, the codec follows the container —
vp9/av1 for WebM — as the first this PyAV build can encode), a preset the encoder does not know,
an existing output without `overwrite`, a missing input, an output that would replace the input
or cannot be written. `open_input` opens the demuxer, with NVIDIA's NVDEC where `decoder_hwaccel`
asks for it (FFmpeg's CUDA hwaccel), telling a GPU decoder that is not usable from a broken
file. `add_video_stream` adds the encoder (yuv420p, crf, preset, threading) with the input's
time base, metadata and colour tags. Each refusal is a `VideoError` naming the file. Not here:
audio and subtitles (`media.remux`) and the frames themselves (`media.video`).
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..engine.options import StylizeOptions
from ..io.atomic import unwritable_reason
from .options import CONTAINER_CODECS, DEFAULT_PRESETS, VIDEO_CODECS, VideoOptions, check_preset
from .remux import error_line

CONTAINERS = {".mp4": "mp4", ".m4v": "mp4", ".mov": "mov", ".mkv": "matroska",
              ".webm": "webm", ".avi": "avi"}
_PRESET_KEYS = {"libx264": "preset", "libx265": "preset", "libsvtav1": "preset"}
# PyAV opens encoders with thread_type SLICE, which FFmpeg passes to x264 as sliced threads:
# one frame at a time split across cores. Frame threads keep every core busy on several frames.
ENCODER_THREADING = {"libx264": "FRAME", "libx265": "FRAME"}
# libvpx-vp9's own defaults run at a few frames/s; row threads and speed 4 are its usual good trade.
_CODEC_DEFAULTS = {"vp9": {"row-mt": "1", "cpu-used": "4", "deadline": "good"}}


class VideoError(ValueError):
    """A video that cannot be read or written; the message names the file and the reason."""


def check_request(src: Path, dst: Path, video: VideoOptions, options: StylizeOptions) -> tuple[str, str]:
    """(container format, codec) to write `dst` with; VideoError for a request that cannot succeed."""
    fmt = CONTAINERS.get(dst.suffix.lower())
    if fmt is None:
        raise VideoError(f"{dst}: cannot write videos with suffix {dst.suffix!r}; "
                         f"use one of {', '.join(sorted(CONTAINERS))}")
    codec = resolve_codec(video.codec, fmt, dst)
    if video.preset is not None:
        try:
            check_preset(codec, video.preset)
        except ValueError as exc:
            raise VideoError(str(exc)) from None
    if dst.exists() and not options.overwrite:
        raise VideoError(f"{dst}: exists (--overwrite to replace it)")
    if not src.is_file():
        raise VideoError(f"{src}: no such file")
    if src.resolve() == dst.resolve():
        raise VideoError(f"{dst}: the output would replace the input; choose another name")
    why = unwritable_reason(dst)
    if why:
        raise VideoError(f"{dst}: cannot write ({why}); choose another -o")
    return fmt, codec


def resolve_codec(codec: str, fmt: str, dst: Path) -> str:
    """The codec name (VIDEO_CODECS key) to write `fmt` with; VideoError when it cannot hold it."""
    takes = CONTAINER_CODECS[fmt]
    if codec != "auto":
        if codec not in takes:
            raise VideoError(f"{dst}: a {dst.suffix} file cannot hold {codec} video; "
                             f"use --video-codec {' or '.join(takes)}, or another suffix")
        return codec
    import av
    for name in takes:
        try:
            av.codec.Codec(VIDEO_CODECS[name], "w")
        except (av.FFmpegError, ValueError):
            continue
        return name
    raise VideoError(f"{dst}: this PyAV build has no encoder for {dst.suffix} "
                     f"({', '.join(takes)}); use .mp4 or .mkv")


def open_input(av, src: Path, hwaccel=None):
    try:   # no hwaccel argument unless asked: PyAV before 14 does not take it
        return av.open(str(src), hwaccel=hwaccel) if hwaccel is not None else av.open(str(src))
    except (av.FFmpegError, OSError) as exc:
        if hwaccel is not None:   # the file may be fine and the GPU's decoder not
            try:
                av.open(str(src)).close()
            except (av.FFmpegError, OSError):
                pass
            else:
                raise VideoError(f"{src}: NVIDIA's decoder is not usable here ({error_line(exc)}); "
                                 "use --decoder cpu") from None
        raise VideoError(f"{src}: cannot open as a video ({error_line(exc)})") from None


def decoder_hwaccel(decoder: str, stylizer):
    """PyAV's CUDA hwaccel settings for `decoder` "cuda" (on the stylizer's GPU), else None."""
    if decoder != "cuda":
        return None
    try:
        from av.codec.hwaccel import HWAccel, hwdevices_available
    except ImportError:
        raise VideoError("--decoder cuda needs PyAV 14 or later; use --decoder cpu") from None
    if "cuda" not in hwdevices_available():
        raise VideoError("--decoder cuda: this PyAV build's FFmpeg has no CUDA hwaccel; use --decoder cpu")
    device = getattr(stylizer, "device", None)
    index = None
    if device is not None and str(device).startswith("cuda"):
        import torch
        index = torch.device(device).index
    return HWAccel("cuda", device=None if index is None else str(index), allow_software_fallback=False)


def add_video_stream(writer, vin, codec: str, video: VideoOptions, rate: Fraction, width: int, height: int):
    """The output's video stream: `codec`'s encoder at `width`×`height` yuv420p, with the input
    stream `vin`'s time base, metadata and colour tags."""
    vout = writer.add_stream(VIDEO_CODECS[codec], rate=rate)
    vout.width, vout.height, vout.pix_fmt = width, height, "yuv420p"
    vout.time_base = vin.time_base
    vout.codec_context.time_base = vin.time_base
    vout.metadata.update(vin.metadata)
    for name in ("color_range", "colorspace", "color_primaries", "color_trc"):
        try:
            setattr(vout.codec_context, name, getattr(vin.codec_context, name))
        except (AttributeError, TypeError, ValueError):
            pass
    codec_options = dict(_CODEC_DEFAULTS.get(codec, {}))
    if video.crf is not None:
        codec_options["crf"] = str(video.crf)
    preset = video.preset if video.preset is not None else DEFAULT_PRESETS.get(codec)
    if preset is not None:
        codec_options[_PRESET_KEYS[VIDEO_CODECS[codec]]] = preset
    vout.options = codec_options
    if VIDEO_CODECS[codec] in ENCODER_THREADING:
        vout.codec_context.thread_type = ENCODER_THREADING[VIDEO_CODECS[codec]]
    return vout
