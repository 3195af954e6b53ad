"""Video through the streaming pipeline: demux + decode → stylize → encode + mux, with PyAV.

`stylize_video(src, dst, stylizer, options, video)` reads any container and codec PyAV's FFmpeg
reads. One thread demuxes and decodes the video stream: on FFmpeg's CPU threads, or with
`decoder="cuda"` on NVIDIA's NVDEC (FFmpeg's CUDA hwaccel, NV12 frames copied to the host). On
CUDA the frames' YUV planes go to the GPU as they are and the engine converts them
(`media.yuv`); elsewhere the pipeline's decode workers convert frames to RGB (honouring the
frame's colour range), the engine stylizes and encode workers convert back to YUV in the
source's colour space and range. The caller's thread encodes (libx264 / libx265 / SVT-AV1 with
`crf`/`preset`) and muxes; with no stylizer (a plain transcode) decoded frames go to the encoder
as they are.
`--temporal` (`video.temporal` > 0) on CUDA blends on the GPU inside the engine stage
(`temporal_torch`), the decode workers computing each frame pair's flows ahead (`flow_ahead`,
from the frame's luma), and frames keep travelling as YUV planes; on the CPU the OpenCV blender
(`temporal`) runs as the frame filter.
The codec follows the container when not named (`resolve_codec`: vp9/av1 for
WebM), and a codec or preset the container or encoder refuses is refused before any work.
A second demuxer over the same file feeds audio and subtitle packets, remuxed untouched
(bit-identical payloads) and interleaved by time behind the video, so no stream is buffered
whole (`remux`). Container and stream metadata, fps, time base and colour tags are copied; rotation
travels as the stream's metadata where the container keeps it that way. The output is written
to a temp file beside `dst` (`io.atomic`: the images' mode, no clobbering without `overwrite`)
and renamed only when complete; a broken stream raises `VideoError` (one line naming the file,
or naming `dst` when writing failed) and leaves nothing behind. `video.max_seconds` and
`options.max_pixels` are enforced on the frames as decoded, not on what the header claims. Not here: the frame
filter's logic
(temporal blending lives with its own module) and images (`media.images`).
"""
from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..engine.options import StylizeOptions
from ..engine.stroke import stroke_factor
from ..io.atomic import atomic_write, unwritable_reason
from .engine_stage import EngineStage, host_pixels
from .flow import to_gray
from .flow_ahead import FlowAhead
from .options import CONTAINER_CODECS, DEFAULT_PRESETS, VIDEO_CODECS, VideoOptions, check_preset
from .pipeline import Item, Stats, stream
from .remux import PacketFeed, copy_streams, error_line
from .yuv import YuvFrame, frame_tags

CONTAINERS = {".mp4": "mp4", ".m4v": "mp4", ".mov": "mov", ".mkv": "matroska",
              ".webm": "webm", ".avi": "avi"}
_PRESET_KEYS = {"libx264": "preset", "libx265": "preset", "libsvtav1": "preset"}
# PyAV opens encoders with thread_type SLICE, which FFmpeg passes to x264 as sliced threads:
# one frame at a time split across cores. Frame threads keep every core busy on several frames.
ENCODER_THREADING = {"libx264": "FRAME", "libx265": "FRAME"}
# NVDEC does the decoding; FFmpeg's frame threads would only add CPU threads that parse headers.
HW_DECODE_THREAD_TYPE = "SLICE"

# libvpx-vp9's own defaults run at a few frames/s; row threads and speed 4 are its usual good trade.
_CODEC_DEFAULTS = {"vp9": {"row-mt": "1", "cpu-used": "4", "deadline": "good"}}
# An FFmpeg error with one of these errnos is the output's fault (disk full, read-only), not the input's.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM})
# A stream that ends before this share of the frames its header promises is called out.
_SHORT_STREAM = 0.98

FrameFilter = Callable[[np.ndarray, np.ndarray], np.ndarray]
Progress = Callable[[int, "int | None"], None]


class VideoError(ValueError):
    """A video that cannot be read or written; the message names the file and the reason."""


@dataclass
class VideoResult:
    output: Path
    frames: int
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _FrameMeta:
    pts: int | None
    colorspace: int
    color_range: int
    content: np.ndarray | None     # kept only when a frame filter needs the input frame
    flow: object = None            # pair flows from the frame before (GPU --temporal), staged


def _open_input(av, src: Path, hwaccel=None):
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


def _hwaccel(decoder: str, stylizer):
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


def stylize_video(src: str | os.PathLike, dst: str | os.PathLike, stylizer, options: StylizeOptions,
                  video: VideoOptions = VideoOptions(), *, progress: Progress | None = None,
                  frame_filter: FrameFilter | None = None, stats: Stats | None = None) -> VideoResult:
    """Stylize every frame of `src` (from `video.start` for `video.duration`) into `dst`.

    `stylizer` is an engine callable (a `Stylizer`) or None for a plain transcode; `frame_filter`
    (content, stylized) → uint8 (H, W, 3) runs on each frame in order before it is encoded."""
    try:
        import av
    except ImportError:
        raise ModuleNotFoundError('video needs PyAV: pip install "styleforge[video]"', name="av") from None
    src, dst = Path(src), Path(dst)
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
    reader = _open_input(av, src, _hwaccel(video.decoder, stylizer))
    started = time.perf_counter()
    results = []

    def write(tmp: str) -> None:
        try:
            with reader:
                results.append(_transcode(av, reader, src, Path(tmp), fmt, codec, stylizer, options,
                                          video, progress, frame_filter, stats))
        except (av.FFmpegError, OSError) as exc:
            if getattr(exc, "errno", None) in _WRITE_ERRNOS:
                raise OSError(exc.errno, error_line(exc)) from None   # atomic_write names dst
            raise VideoError(f"{src}: broken or unreadable stream ({error_line(exc)})") from None

    try:
        atomic_write(dst, write, replace=options.overwrite)
    except OSError as exc:       # "<dst>: cannot write (<reason>)" or "<dst>: exists (…)"
        raise VideoError(str(exc.strerror or exc)) from None
    result = results[0]
    result.output, result.seconds = dst, time.perf_counter() - started
    return result


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


def _transcode(av, reader, src: Path, tmp: Path, fmt: str, codec: str, stylizer, options: StylizeOptions,
               video: VideoOptions, progress, frame_filter, stats) -> VideoResult:
    if not reader.streams.video:
        raise VideoError(f"{src}: has no video stream")
    vin = reader.streams.video[0]
    vin.thread_type = HW_DECODE_THREAD_TYPE if vin.codec_context.is_hwaccel else "AUTO"
    notes: list[str] = []
    for extra in reader.streams.video[1:]:
        notes.append(f"{src}: video stream {extra.index} not kept (only the first video stream is stylized)")
    pixels = vin.codec_context.width * vin.codec_context.height
    if pixels > options.max_pixels:
        raise VideoError(f"{src}: {vin.codec_context.width}×{vin.codec_context.height} = {pixels:,} pixels "
                         f"a frame is over the limit of {options.max_pixels:,}")
    start, end = video.start, (video.start + video.duration if video.duration is not None else None)
    offset_s = start  # every stream shifts by the same time, so sync is kept
    rate = vin.average_rate or vin.guessed_rate or Fraction(30)
    width, height = vin.codec_context.width, vin.codec_context.height
    even_w, even_h = width - width % 2, height - height % 2
    if (even_w, even_h) != (width, height):
        notes.append(f"{src}: {width}×{height} cropped to {even_w}×{even_h} (4:2:0 needs even sides)")
    with av.open(str(tmp), "w", format=fmt) as writer:
        writer.metadata.update(reader.metadata)
        vout = writer.add_stream(VIDEO_CODECS[codec], rate=rate)
        vout.width, vout.height, vout.pix_fmt = even_w, even_h, "yuv420p"
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
        copied = copy_streams(reader, writer, notes)
        packets = PacketFeed(av, src, copied, start, end, offset_s)
        total = _frame_count(vin, rate, start, end)
        engine = EngineStage(stylizer) if stylizer is not None else None
        flows = None
        if engine is not None and frame_filter is None and video.temporal > 0:
            # The blend keeps strokes finer than detail_sigma at the network's scale, i.e. this many px.
            strokes = stroke_factor(even_h, even_w, getattr(getattr(stylizer, "options", None), "stroke_scale", None))
            if engine.cuda:   # the blend on the engine's output, its flows ahead in the decode workers
                from .temporal_torch import TorchTemporalBlender
                engine.temporal = TorchTemporalBlender(strength=video.temporal, stroke_factor=strokes,
                                                       device=engine.device)
                flows = FlowAhead(engine.temporal.preset, engine.temporal.flow_max_side)
            else:             # one OpenCV blender per video, called in frame order
                from .temporal import TemporalBlender
                frame_filter = TemporalBlender(strength=video.temporal, stroke_factor=strokes)
        offset_pts = round(offset_s / vin.time_base) if offset_s else 0

        # On CUDA without a frame filter, frames travel as yuv420p planes and the colour conversion
        # runs on the GPU (media.yuv): the CPU's cores are left to the decoder and the encoder.
        planar = engine is not None and engine.cuda and frame_filter is None and (even_w, even_h) == (width, height)
        # A plain transcode (no stylizer) hands decoded frames to the encoder as they are.
        passthrough = engine is None and frame_filter is None and (even_w, even_h) == (width, height)

        def decode(item: Item) -> None:
            if flows is None:
                return decode_frame(item)
            luma = None
            try:
                decode_frame(item)
                luma = (item.pixels.planes.numpy()[:height] if isinstance(item.pixels, YuvFrame)
                        else to_gray(item.pixels.numpy() if hasattr(item.pixels, "numpy") else item.pixels))
            finally:   # every frame reports, failed or not: the next one waits for it
                flow = flows(item.index, luma)
            item.meta.flow = engine.stage(flow) if flow is not None else None

        def decode_frame(item: Item) -> None:
            frame = item.task
            item.task = f"{src} frame at {float(frame.time or 0):.3f} s"
            item.meta = _FrameMeta(frame.pts, frame.colorspace, frame.color_range, None)
            if passthrough:
                item.pixels = frame
                return
            if planar:
                if frame.format.name not in ("yuv420p", "yuvj420p", "nv12"):
                    frame = frame.reformat(format="yuv420p")
                matrix, full = frame_tags(frame.colorspace, frame.color_range, frame.format.name)
                item.pixels = YuvFrame(engine.stage(frame.to_ndarray()), height, width, matrix, full,
                                       nv12=frame.format.name == "nv12")
                return
            cr = frame.color_range or None
            rgb = frame.reformat(format="rgb24", src_color_range=cr).to_ndarray()[:even_h, :even_w]
            item.pixels = engine.stage(rgb) if engine is not None else rgb
            item.meta.content = rgb if frame_filter is not None else None

        def encode(item: Item) -> None:
            meta: _FrameMeta = item.meta
            if passthrough:
                frame = item.out.reformat(format="yuv420p")
                frame.pict_type = av.video.frame.PictureType.NONE   # else it forces x264's frame types
                frame.colorspace, frame.color_range = meta.colorspace, meta.color_range
                item.result = frame
                return
            out = host_pixels(item.out)
            if planar:
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(out), format="yuv420p")
                frame.colorspace, frame.color_range = meta.colorspace, meta.color_range
                item.result = frame
                return
            if frame_filter is not None:
                out = _filtered(frame_filter, meta.content, out)
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(out), format="rgb24")
            item.result = frame.reformat(format="yuv420p", dst_colorspace=meta.colorspace or None,
                                         dst_color_range=meta.color_range or None)

        done = 0
        frames = _frames(av, reader, vin, src, start, end, _limit(video.max_seconds, rate, vin, src, options))
        pipeline = video.pipeline
        # Frames must stay in order through a stateful filter: it sees them one by one, so the
        # encode workers (which apply it) are one thread then.
        workers = 1 if frame_filter is not None else pipeline.workers
        for item in stream(frames, decode, engine, encode, decode_workers=pipeline.workers,
                           encode_workers=workers, depth=pipeline.depth,
                           max_batch=options.batch_size, stats=stats):
            if item.error is not None:
                raise VideoError(item.error)
            frame = item.result
            frame.pts = None if item.meta.pts is None else item.meta.pts - offset_pts
            frame.time_base = vin.time_base
            for packet in vout.encode(frame):
                writer.mux(packet)
            packets.mux_until(writer, None if frame.pts is None else float(frame.pts * vin.time_base))
            done += 1
            if progress is not None:
                progress(done, total)
        for packet in vout.encode(None):
            writer.mux(packet)
        packets.mux_until(writer, None, final=True)
        packets.close()
    if done == 0:
        raise VideoError(f"{src}: no video frames in the range asked for")
    if end is None and total is not None and done < _SHORT_STREAM * total - 1:
        notes.append(f"{src}: the video stream ends after {done} of the {total} frames its header "
                     f"gives (a truncated file?); the output is {done / float(rate):.1f} s long")
    return VideoResult(tmp, done, 0.0, notes)


def _limit(max_seconds: float | None, rate: Fraction, vin, src: Path, options: StylizeOptions):
    """check(frame, count) → None, raising VideoError once the decoded stream passes
    `max_seconds` by its timestamps or its frame count (the header's duration may lie), or
    a frame passes `options.max_pixels` (a stream may change size midway)."""
    most_frames = None if max_seconds is None else max_seconds * float(rate) + 1

    def check(frame, count: int, first_time: float | None) -> None:
        if frame.width * frame.height > options.max_pixels:
            raise VideoError(f"{src}: a {frame.width}×{frame.height} frame is over the limit of "
                             f"{options.max_pixels:,} pixels")
        if max_seconds is None:
            return
        t = frame.time
        if count > most_frames or (t is not None and first_time is not None and t - first_time > max_seconds):
            raise VideoError(f"{src}: longer than the limit of {max_seconds:g} s (stopped at frame "
                             f"{count}); trim it first")
    return check


def _filtered(frame_filter: FrameFilter, content: np.ndarray, out: np.ndarray) -> np.ndarray:
    filtered = np.asarray(frame_filter(content, out))
    if filtered.shape != out.shape or filtered.dtype != np.uint8:
        raise ValueError(f"frame_filter returned {filtered.dtype} {filtered.shape}; "
                         f"expected uint8 {out.shape}")
    return filtered


def _frames(av, reader, vin, src: Path, start: float, end: float | None, check) -> Iterator:
    if start > 0:
        reader.seek(int(start * av.time_base), backward=True, any_frame=False)
    count, first_time = 0, None
    try:
        for frame in reader.decode(vin):
            t = frame.time
            if t is not None and t < start - 1e-6:
                continue
            if end is not None and t is not None and t >= end - 1e-6:
                return
            count += 1
            first_time = t if first_time is None else first_time
            check(frame, count, first_time)
            yield frame
    except av.FFmpegError as exc:
        raise VideoError(f"{src}: broken video stream ({error_line(exc)})") from None


def _frame_count(vin, rate: Fraction, start: float, end: float | None) -> int | None:
    if end is not None:
        return max(1, round((end - start) * float(rate)))
    if vin.frames:
        return max(1, vin.frames - round(start * float(rate)))
    return None
