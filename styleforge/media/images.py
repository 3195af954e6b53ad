"""Image files (and stdin/stdout) through the streaming pipeline: decode, stylize, write.

`stylize_images(jobs, stylizer, options)` yields one `Record` per `ImageJob`, in order. Decode
workers read with `io.image.load_image` (EXIF, ICC, alpha, 16-bit as it handles them), or hand a
plain JPEG to the engine for nvJPEG (`media.codecs`); encode workers merge the alpha back and
write atomically with `io.image.save_image` / `atomic_write`, or the GPU-encoded bytes. A
source "-" is the bytes in `stdin`; a target "-" is written to `stdout` by the caller's thread,
in order. Each target's claim (`jobs.write`) is taken before
decode and released with its record, so two runs never both stylize one output. Not here:
which files and output names (`jobs.plan`), the engine (`engine`).
"""
from __future__ import annotations

import dataclasses
import io
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

import numpy as np
from PIL import Image

from ..engine.memory import release_freed_memory
from ..engine.options import StylizeOptions
from ..io.image import (
    ImageError,
    LoadedImage,
    OutputExists,
    atomic_write,
    encode_into,
    format_for,
    holds_alpha,
    load_image,
    multi_frame_message,
    save_image,
)
from ..jobs.write import Claim, claim, is_done
from .codecs import GPU_CHROMA, DeviceImage, decode_jpeg_gpu, encode_jpeg_gpu, gpu_decodable, resolve_codec
from .engine_stage import EngineStage, host_pixels
from .options import PipelineOptions
from .pipeline import Item, Stats, stream
from .records import Record

STDIO = "-"
_GPU_SUFFIXES = (".jpg", ".jpeg")


@dataclass
class ImageJob:
    source: Path | str      # a path, or "-" for stdin
    target: Path | str      # a path, or "-" for stdout

    def __str__(self) -> str:   # error lines name the input file
        return "stdin" if str(self.source) == "-" else str(self.source)


@dataclass
class _Meta:
    loaded: LoadedImage | None    # None when nvJPEG decodes (no alpha, no ICC by construction)
    gpu_encode: bool
    stdout_format: str | None


_SKIPPED = "skipped"    # item.meta of a job whose output another run wrote meanwhile


def stylize_images(jobs: Iterable[ImageJob], stylizer, options: StylizeOptions,
                   pipeline: PipelineOptions = PipelineOptions(), *, stdin: BinaryIO | None = None,
                   stdout: BinaryIO | None = None, stats: Stats | None = None) -> Iterator[Record]:
    """One `Record` per job, in job order; a bad job's record carries its error."""
    engine = EngineStage(stylizer) if stylizer is not None else None
    device = engine.device if engine is not None else None
    # nvJPEG (torchvision's encode_jpeg) always writes 4:4:4, so other samplings go through Pillow.
    items = len(jobs) if hasattr(jobs, "__len__") else None
    gpu = engine is not None and resolve_codec(pipeline.codec, device, items) == "gpu"
    gpu_encode = gpu and options.chroma == GPU_CHROMA

    claims: dict[int, Claim] = {}     # item index → its target's claim, released with its record
    claims_lock = threading.Lock()

    def decode(item: Item) -> None:
        job: ImageJob = item.task
        if str(job.target) != STDIO:
            _claim_target(item, job, options.overwrite, claims, claims_lock)
        data = None
        if str(job.source) == STDIO:
            data = (stdin.read() if stdin is not None else b"")
        elif gpu:
            try:
                data = Path(job.source).read_bytes()
            except OSError:
                data = None  # load_image names the file and the reason
        to_stdout = str(job.target) == STDIO
        fmt = _stdout_format(job.source, data) if to_stdout else None
        jpeg = gpu_decodable(data, options.max_pixels, options.max_side) if gpu and data else None
        if jpeg is not None:
            item.pixels = decode_jpeg_gpu(jpeg, device, engine.decode)
            item.meta = _Meta(None, gpu_encode and not to_stdout
                              and Path(job.target).suffix.lower() in _GPU_SUFFIXES, fmt)
            return
        name = "stdin" if str(job.source) == STDIO else job.source
        check = getattr(stylizer, "check_size", None)   # the memory budget refuses from the header
        loaded = load_image(name, options.max_pixels, options.max_side, check=check, data=data,
                            warn_frames=False).resized(options.max_side)
        pixels = np.asarray(loaded.rgb)
        loaded = dataclasses.replace(loaded, rgb=None)   # the array is the image now: one copy, not two
        release_freed_memory(pixels.shape[0] * pixels.shape[1])
        item.pixels = engine.stage(pixels) if engine is not None else pixels
        item.meta = _Meta(loaded, gpu_encode and loaded.alpha is None and loaded.icc_profile is None
                          and not to_stdout and Path(job.target).suffix.lower() in _GPU_SUFFIXES, fmt)

    def encode(item: Item) -> None:
        job: ImageJob = item.task
        meta: _Meta = item.meta
        if isinstance(item.out, DeviceImage):
            data = encode_jpeg_gpu(item.out, options.quality)
            item.out = None
            item.result = atomic_write(job.target, lambda handle: handle.write(data), options.overwrite)
            item.meta = []
            return
        rgb = Image.fromarray(np.ascontiguousarray(host_pixels(item.out)))
        loaded = meta.loaded
        image = loaded.merged(rgb) if loaded is not None else rgb
        fmt = meta.stdout_format or format_for(job.target)
        notes = []
        if loaded is not None and loaded.frames > 1:   # a note in the record, so --json has it too
            notes.append(multi_frame_message(job, loaded.frames))
        if loaded is not None and loaded.alpha is not None and not holds_alpha(fmt):
            name = "stdout" if meta.stdout_format else Path(job.target).name
            notes.append(f"{name}: {fmt} has no alpha channel, transparency dropped")
        icc = loaded.icc_profile if loaded is not None else None
        if meta.stdout_format:
            buffer = io.BytesIO()
            encode_into(buffer, image, fmt, options.quality, options.chroma, icc)
            item.result = buffer.getvalue()
        else:
            item.result = save_image(image, job.target, options.quality, icc, options.chroma,
                                     replace=options.overwrite)
        item.meta = notes

    def guarded(stage):
        def run(item: Item) -> None:
            try:
                stage(item)
            except OutputExists as exc:   # the error only routes the item past the engine
                item.meta, item.out, item.pixels, item.error = _SKIPPED, None, None, str(exc)
        return run

    items = stream(jobs, guarded(decode), engine, guarded(encode), decode_workers=pipeline.workers,
                   encode_workers=pipeline.workers, depth=pipeline.depth,
                   max_batch=options.batch_size, stats=stats)
    try:
        for item in items:
            try:
                yield _record(item, stdout)
            finally:
                with claims_lock:
                    held = claims.pop(item.index, None)
                if held is not None:
                    held.release()
    finally:   # a consumer that stops early (or an interrupt) must not leave live claims
        with claims_lock:
            for held in claims.values():
                held.release()
            claims.clear()


def warm_images(job: ImageJob, stylizer, options: StylizeOptions,
                pipeline: PipelineOptions = PipelineOptions(), items: int | None = None) -> None:
    """Pay the pipeline's one-time costs at `job`'s image before real work: the codec (importing
    torchvision and nvJPEG's set-up, where `items` jobs would take it), the engine's first call at
    that shape (cuDNN's heuristics, the 9×9 choice) and its graph capture (cuDNN's timing, the plan
    choice) — the first item runs eagerly and the second captures, as in any stream. The image is
    stylized twice into a scratch folder in the system's temp space, never beside the outputs.
    For a process that must be ready when it says so (`jobs.multi_device`); a single run gains
    nothing from it, its first items pay the same. A bad `job` only warms less."""
    import tempfile

    import torch
    codec = resolve_codec(pipeline.codec, torch.device(getattr(stylizer, "device", "cpu")), items)
    warm = dataclasses.replace(options, overwrite=True)
    try:
        folder = tempfile.TemporaryDirectory(prefix="styleforge-warm-")
    except OSError:
        return            # no scratch space: the first real items pay the set-up instead
    with folder as scratch:
        suffix = Path(job.target).suffix
        twice = [ImageJob(job.source, Path(scratch) / f"warm{i}{suffix}") for i in range(2)]
        for _ in stylize_images(twice, stylizer, warm, dataclasses.replace(pipeline, codec=codec)):
            pass


def _claim_target(item: Item, job: ImageJob, overwrite: bool, claims: dict, lock) -> None:
    """Take the target's claim before any work (`jobs.write`); OutputExists (a skip) when the
    output exists by now (a second run over the same files wrote it since the plan was made)
    or another live run holds the claim."""
    def exists() -> OutputExists:
        return OutputExists(f"{job.target}: exists (written meanwhile by another run; "
                            "--overwrite to replace it)")
    if not overwrite and is_done(job.target):
        raise exists()
    try:
        held = claim(job.target)
    except OSError:
        return            # an unwritable folder: the write names the reason in its own words
    if held is None:
        raise OutputExists(f"{job.target}: being written by another run")
    with lock:
        claims[item.index] = held
    if not overwrite and is_done(job.target):   # finished just before we claimed it
        raise exists()


def _record(item: Item, stdout: BinaryIO | None) -> Record:
    job: ImageJob = item.task
    shape = item.shape
    record = Record(item.index, str(job.source), None, shape[1] if shape else None,
                    shape[0] if shape else None, item.seconds, item.error)
    if item.meta == _SKIPPED:
        record.output, record.skipped, record.error = str(job.target), True, None
        record.notes = [item.error]
        return record
    if item.error is not None:
        return record
    record.notes = item.meta if isinstance(item.meta, list) else []
    if str(job.target) == STDIO:
        if stdout is None:
            raise ValueError("a target '-' needs a stdout stream")
        stdout.write(item.result)
        stdout.flush()
    record.output = str(job.target)
    return record


def _stdout_format(source: Path | str, data: bytes | None) -> str:
    """The input's own format where Pillow writes it (JPEG stays JPEG), else PNG."""
    if data is not None:
        return "JPEG" if data.startswith(b"\xff\xd8\xff") else "PNG"
    try:
        return format_for(source)
    except ImageError:
        return "PNG"


__all__ = ["ImageJob", "stylize_images", "warm_images", "STDIO"]
