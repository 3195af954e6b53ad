"""Which of a video's frames are read: those of the asked range, as decoded, within the limits.

`frames_in_range` seeks to `start`, decodes the first video stream and yields its frames from
`start` up to `end`, calling `frame_check` on each: `max_seconds` and `max_pixels` are enforced
on the frames as decoded, not on what the header claims (its duration may lie, and a stream may
change size midway). `expected_frames` is the count a progress bar shows, None where the header
gives none. A broken stream or a limit passed is a `VideoError` naming the file. Not here:
opening the file (`media.video_setup`) and what happens to the frames (`media.video`).
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Iterator

from ..engine.options import StylizeOptions
from .remux import error_line
from .video_setup import VideoError


def frame_check(max_seconds: float | None, rate: Fraction, vin, src: Path, options: StylizeOptions):
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


def frames_in_range(av, reader, vin, src: Path, start: float, end: float | None, check) -> Iterator:
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


def expected_frames(vin, rate: Fraction, start: float, end: float | None) -> int | None:
    if end is not None:
        return max(1, round((end - start) * float(rate)))
    if vin.frames:
        return max(1, vin.frames - round(start * float(rate)))
    return None
