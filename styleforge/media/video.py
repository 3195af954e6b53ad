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
from the frame's luma; or with `temporal_flow="torch"` the engine stage on the GPU,
`flow_torch`), and frames keep travelling as YUV planes; on the CPU the OpenCV blender
(`temporal`) runs as the frame filter.
The codec follows the container when not named (vp9/av1 for WebM), and a codec or preset the
container or encoder refuses is refused before any work (`video_setup`, which also opens the
input and sets up the encoder).
A second demuxer over the same file feeds audio and subtitle packets, remuxed untouched
(bit-identical payloads) and interleaved by time behind the video, so no stream is buffered
whole (`remux`). Container and stream metadata, fps, time base and colour tags are copied; rotation
travels as the stream's metadata where the container keeps it that way. The output is written
to a temp file beside `dst` (`io.atomic`: the images' mode, no clobbering without `overwrite`)
and renamed only when complete; a broken stream raises `VideoError` (one line naming the file,
or naming `dst` when writing failed) and leaves nothing behind. `video.max_seconds` and
`options.max_pixels` are enforced on the frames as decoded, not on what the header claims
(`video_range`). Not here: the frame
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
from typing import Callable

import numpy as np

from ..engine.options import StylizeOptions
from ..engine.stroke import stroke_factor
from ..io.atomic import atomic_write
from .engine_stage import EngineStage, host_pixels
from .flow import opencv_threads, to_gray
from .flow_ahead import FlowAhead
from .options import VideoOptions
from .pipeline import Item, Stats, stream
from .remux import PacketFeed, copy_streams, error_line
from .video_range import expected_frames, frame_check, frames_in_range
from .video_setup import VideoError, add_video_stream, check_request, decoder_hwaccel, open_input
from .yuv import YuvFrame, frame_tags

# NVDEC does the decoding; FFmpeg's frame threads would only add CPU threads that parse headers.
HW_DECODE_THREAD_TYPE = "SLICE"

# An FFmpeg error with one of these errnos is the output's fault (disk full, read-only), not the input's.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM})
# A stream that ends before this share of the frames its header promises is called out.
_SHORT_STREAM = 0.98

FrameFilter = Callable[[np.ndarray, np.ndarray], np.ndarray]
Progress = Callable[[int, "int | None"], None]


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
    fmt, codec = check_request(src, dst, video, options)
    reader = open_input(av, src, decoder_hwaccel(video.decoder, stylizer))
    started = time.perf_counter()
    results = []

    def write(tmp: str) -> None:
        try:
            with reader, opencv_threads(video.temporal_flow_threads if video.temporal > 0 else None):
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
        vout = add_video_stream(writer, vin, codec, video, rate, even_w, even_h)
        copied = copy_streams(reader, writer, notes)
        packets = PacketFeed(av, src, copied, start, end, offset_s)
        total = expected_frames(vin, rate, start, end)
        engine = EngineStage(stylizer) if stylizer is not None else None
        flows = None
        if engine is not None and frame_filter is None and video.temporal > 0:
            # The blend keeps strokes finer than detail_sigma at the network's scale, i.e. this many px.
            strokes = stroke_factor(even_h, even_w, getattr(getattr(stylizer, "options", None), "stroke_scale", None))
            flow = dict(preset=video.temporal_flow_preset, flow_max_side=video.temporal_flow_size,
                        flow_check=video.temporal_flow_check)
            if engine.cuda:   # the blend on the engine's output, its flows ahead in the decode workers
                from .temporal_torch import TorchTemporalBlender
                engine.temporal = TorchTemporalBlender(strength=video.temporal, stroke_factor=strokes,
                                                       device=engine.device, **flow)
                if video.temporal_flow == "torch":   # or on the GPU, in the engine stage, from its content
                    from .flow_torch import DeviceFlows
                    engine.flows = DeviceFlows(video.temporal_flow_size, check=video.temporal_flow_check)
                else:
                    flows = FlowAhead(engine.temporal.preset, engine.temporal.flow_max_side,
                                      engine.temporal.flow_check)
            else:             # one OpenCV blender per video, called in frame order (DIS flows)
                from .temporal import TemporalBlender
                frame_filter = TemporalBlender(strength=video.temporal, stroke_factor=strokes, **flow)
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
        frames = frames_in_range(av, reader, vin, src, start, end,
                                 frame_check(video.max_seconds, rate, vin, src, options))
        pipeline = video.pipeline
        # Frames must stay in order through a stateful filter: it sees them one by one, so the
        # encode workers (which apply it) are one thread then.
        workers = 1 if frame_filter is not None else pipeline.workers
        for item in stream(frames, decode, engine, encode, decode_workers=pipeline.workers,
                           encode_workers=workers, depth=pipeline.depth,
                           max_batch=options.batch_size, stats=stats):
            if item.error is not None:   # chained: a CUDA error's traceback says which call raised it
                raise VideoError(item.error) from item.cause
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


def _filtered(frame_filter: FrameFilter, content: np.ndarray, out: np.ndarray) -> np.ndarray:
    filtered = np.asarray(frame_filter(content, out))
    if filtered.shape != out.shape or filtered.dtype != np.uint8:
        raise ValueError(f"frame_filter returned {filtered.dtype} {filtered.shape}; "
                         f"expected uint8 {out.shape}")
    return filtered
