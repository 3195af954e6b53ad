"""The pipeline benchmark's floor and output checks, written without StyleForge's media pipeline.

`jpeg_floor` decodes and re-encodes a folder of JPEGs with Pillow on a plain thread pool (the
same quality and 4:2:0 subsampling the pipeline's Pillow codec writes), `video_floor` is a plain
PyAV transcode (decode, libx264 with the pipeline's preset, crf, pixel format and frame threads,
the audio copied): what a user would write to move the same files without a network. Neither
imports `styleforge.media`: a floor that ran through our own pipeline would carry its costs.
`check_images` / `check_video` verify what a run wrote: the number of outputs, each one's size,
and the PSNR of a few sampled outputs against an expected picture (the engine's own output for
stylized runs, the source for the floor). Not here: the cases and the timing (`pipeline`).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..psnr import psnr

JPEG_SUBSAMPLING = 2          # Pillow's 4:2:0, its default for JPEG, which the pipeline writes too
SAMPLES = 3                   # outputs whose PSNR is checked: first, middle, last


def jpeg_floor(files: list[Path], out: Path, quality: int, workers: int) -> None:
    """Decode each JPEG to RGB and write it again at `quality`, `workers` files at a time."""
    from PIL import Image
    out.mkdir(parents=True, exist_ok=True)

    def one(path: Path) -> None:
        with Image.open(path) as image:
            image.convert("RGB").save(out / path.name, quality=quality, subsampling=JPEG_SUBSAMPLING)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, files))     # list(): re-raise the first failure


def video_floor(src: Path, dst: Path, preset: str, crf: int | None) -> None:
    """Transcode `src`'s video to H.264 (yuv420p, `preset`, `crf`, frame threads), audio copied."""
    import av
    with av.open(str(src)) as reader, av.open(str(dst), "w") as writer:
        vin = reader.streams.video[0]
        vin.thread_type = "AUTO"
        vout = writer.add_stream("libx264", rate=vin.average_rate or vin.guessed_rate)
        vout.width, vout.height, vout.pix_fmt = vin.codec_context.width, vin.codec_context.height, "yuv420p"
        vout.time_base = vin.time_base
        vout.options = {"preset": preset, **({"crf": str(crf)} if crf is not None else {})}
        vout.codec_context.thread_type = "FRAME"
        audio = {s.index: writer.add_stream_from_template(s) for s in reader.streams.audio}
        for packet in reader.demux(vin, *reader.streams.audio):
            if packet.stream.index in audio:
                if packet.dts is not None:
                    packet.stream = audio[packet.stream.index]
                    writer.mux(packet)
                continue
            for frame in packet.decode():
                if frame.format.name != "yuv420p":
                    frame = frame.reformat(format="yuv420p")
                frame.pict_type = av.video.frame.PictureType.NONE   # else the source's types bind x264
                for out_packet in vout.encode(frame):
                    writer.mux(out_packet)
        for out_packet in vout.encode(None):
            writer.mux(out_packet)


@dataclass
class Check:
    count: int = 0
    expected: int = 0
    size_errors: list[str] = field(default_factory=list)
    psnr_db: list[float] = field(default_factory=list)
    min_psnr_db: float = 0.0      # the bar the sampled outputs must reach

    @property
    def ok(self) -> bool:
        return (self.count == self.expected and not self.size_errors
                and all(p >= self.min_psnr_db for p in self.psnr_db))

    def problem(self) -> str:
        if self.count != self.expected:
            return f"{self.count} outputs, expected {self.expected}"
        if self.size_errors:
            return f"wrong size: {self.size_errors[0]}"
        low = min(self.psnr_db)
        return f"sampled PSNR {low:.1f} dB < {self.min_psnr_db:g} dB" if low < self.min_psnr_db else ""

    def notes(self) -> dict:
        return {"count": self.count, "min_psnr_db": round(min(self.psnr_db), 1) if self.psnr_db else None,
                "psnr_bar_db": self.min_psnr_db, "sampled": len(self.psnr_db)}


def _sample(n: int) -> list[int]:
    return sorted({0, n // 2, n - 1}) if n else []


def check_images(inputs: list[Path], out: Path, expect: Callable[[np.ndarray], np.ndarray],
                 min_psnr_db: float) -> Check:
    """Every input has an output of its name and size in `out`; sampled outputs are within
    `min_psnr_db` of expect(input pixels) (HWC uint8 RGB)."""
    from PIL import Image
    check = Check(expected=len(inputs), min_psnr_db=min_psnr_db)
    written = {p.name for p in out.iterdir()} if out.is_dir() else set()
    check.count = sum(p.name in written for p in inputs)
    for i, path in enumerate(inputs):
        if path.name not in written:
            continue
        with Image.open(path) as src, Image.open(out / path.name) as got:
            if got.size != src.size:
                check.size_errors.append(f"{path.name}: {got.size} != {src.size}")
                continue
            if i in _sample(len(inputs)):
                pixels = np.asarray(src.convert("RGB"))
                check.psnr_db.append(psnr(np.asarray(got.convert("RGB")), expect(pixels)))
    return check


def check_video(src: Path, out: Path, expect: Callable[[np.ndarray], np.ndarray], min_psnr_db: float) -> Check:
    """`out` has as many video frames as `src`, of its size, and an audio stream if `src` has one;
    sampled frames are within `min_psnr_db` of expect(source frame)."""
    import av
    with av.open(str(src)) as a:    # one packet per frame in these clips: count without decoding
        total = sum(1 for packet in a.demux(video=0) if packet.size)
    picks = _sample(total)
    with av.open(str(src)) as a:
        size = (a.streams.video[0].codec_context.height, a.streams.video[0].codec_context.width)
        had_audio = bool(a.streams.audio)
        sources = {i: f.to_ndarray(format="rgb24") for i, f in enumerate(a.decode(video=0)) if i in picks}
    check = Check(expected=total, min_psnr_db=min_psnr_db)
    if not out.is_file():
        return check
    with av.open(str(out)) as b:
        if had_audio and not b.streams.audio:
            check.size_errors.append("the audio stream was dropped")
        for i, frame in enumerate(b.decode(video=0)):
            check.count += 1
            if (frame.height, frame.width) != size:
                check.size_errors.append(f"frame {i}: {frame.width}x{frame.height}")
            elif i in sources:
                check.psnr_db.append(psnr(frame.to_ndarray(format="rgb24"), expect(sources[i])))
    return check
