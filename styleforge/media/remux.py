"""The streams a video keeps untouched: audio and subtitles, copied packet for packet.

`copy_streams` adds to the output an audio or subtitle stream for each one the input has and the
container takes (a note for each it refuses); `PacketFeed` reads their packets from a second
demuxer over the same file and muxes them up to the video's current time, so they interleave with
the encoded frames and no stream is buffered whole. Payloads are never decoded (bit-identical);
a trimmed run (`start`/`end`) drops the packets outside it and shifts the rest by `offset_s`. Not
here: the video stream itself (`media.video`).
"""
from __future__ import annotations

from pathlib import Path


def error_line(exc: BaseException) -> str:
    """The first line of an FFmpeg or OS error's message (its strerror where it has one)."""
    text = getattr(exc, "strerror", None) or str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def copy_streams(reader, writer, notes: list[str]) -> dict[int, object]:
    """Input stream index → output stream, for the audio and subtitle streams the muxer takes."""
    copied = {}
    for stream_in in reader.streams:
        if stream_in.type not in ("audio", "subtitle"):
            continue
        try:
            stream_out = writer.add_stream_from_template(stream_in)
            stream_out.metadata.update(stream_in.metadata)
            copied[stream_in.index] = stream_out
        except Exception as exc:  # e.g. a subtitle codec this container cannot hold
            notes.append(f"{stream_in.type} stream {stream_in.index} "
                         f"({stream_in.codec_context.name}) not kept: {error_line(exc)}")
    return copied


class PacketFeed:
    """Audio/subtitle packets from a second demuxer, muxed up to the video's current time."""

    def __init__(self, av, src: Path, copied: dict, start: float, end: float | None, offset_s: float):
        self.copied, self.start, self.end, self.offset_s = copied, start, end, offset_s
        self.reader = av.open(str(src)) if copied else None
        if self.reader is not None:
            if start > 0:
                self.reader.seek(int(start * av.time_base), backward=True, any_frame=False)
            self.packets = self.reader.demux(*[self.reader.streams[i] for i in copied])
        self.pending = None

    def mux_until(self, writer, until: float | None, final: bool = False) -> None:
        if self.reader is None:
            return
        while True:
            packet = self.pending or next(self.packets, None)
            self.pending = None
            if packet is None:
                return
            if packet.size == 0:  # the demuxer's end-of-stream flush marker
                continue
            ts = packet.pts if packet.pts is not None else packet.dts
            t = float(ts * packet.time_base) if ts is not None else None
            if not final and until is not None and t is not None and t > until:
                self.pending = packet
                return
            if t is not None and (t < self.start - 1e-6 and self.start > 0
                                  or self.end is not None and t >= self.end - 1e-6):
                continue
            if self.offset_s:
                shift = round(self.offset_s / packet.time_base)
                packet.pts = None if packet.pts is None else packet.pts - shift
                packet.dts = None if packet.dts is None else packet.dts - shift
            packet.stream = self.copied[packet.stream_index]
            writer.mux(packet)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
