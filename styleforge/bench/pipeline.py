"""`styleforge bench --pipeline`: the media pipeline end to end beside the engine alone and a floor.

For each case it generates its own data (`pipeline_inputs`: smooth synthetic photos as JPEG;
H.264 + AAC clips made with PyAV) in a temp folder, then measures on the same data: `pipeline` (file read to file
written through `media.stylize_images` / `media.stylize_video`, engine and codecs warmed on the
first items beforehand, process start excluded), `engine` (the same `Stylizer` alone on
device-resident inputs of the same shapes, in the same order) and `floor`, a plain decode +
encode written without our pipeline (`pipeline_floor`: Pillow on a thread pool for JPEG, the same
quality, subsampling and thread count; a PyAV transcode for video, the same preset and crf);
video also has `floor-styled`, the same plain transcode of the pipeline's stylized output. Each
provider runs `runs` times and its row gives the median, every run's seconds and N. Every row
checks its outputs (`pipeline_floor.check_*`): their count, their sizes, and the PSNR of sampled
outputs against the engine's own output of the same input (the floor: against its input); a row
that fails its check is `failed`. Each pipeline row carries `ratio_vs_slower` = pipeline ÷
min(engine, floor): the issue's bar is ≥ 0.7. The mixed folder (200 photos in 50 sizes, 800–4000 px)
is paired with a same-size folder of similar pixel count (`jpeg-mixed-ref`); its bar is mixed ≥
0.5 × that. Rows go to `pipeline.csv`. `quick` shrinks every case to a few tiny items.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..engine.options import StylizeOptions
from ..media.options import DEFAULT_PRESETS
from .pipeline_floor import Check, check_images, check_video, jpeg_floor, video_floor
from .pipeline_inputs import VIDEO_FPS, image_sizes, write_clip, write_photo
from .results import DEFAULT_OUTPUT, Row, append_rows, new_run_id

# name → (kind, count, sizes as (w, h); mixed: None = generated), full and quick.
_CASES = {
    "jpeg-1080p": ("images", 120, [(1920, 1080)]),
    "jpeg-4k": ("images", 40, [(3840, 2160)]),
    "jpeg-mixed": ("images", 200, None),
    "jpeg-mixed-ref": ("images", 200, None),
    "video-1080p": ("video", 300, [(1920, 1080)]),
    "video-4k": ("video", 120, [(3840, 2160)]),
}
_QUICK = {"jpeg-1080p": (6, [(96, 54)]), "jpeg-4k": (4, [(192, 108)]),
          "jpeg-mixed": (8, None), "jpeg-mixed-ref": (8, None),
          "video-1080p": (8, [(96, 54)]), "video-4k": (6, [(192, 108)])}
# Sampled outputs against the engine's own picture: JPEG q95 and x264 crf 23 of a stylized frame
# stay well above these, a wrong or unstylized output (the photo itself) falls far below.
IMAGE_PSNR_DB, VIDEO_PSNR_DB = 30.0, 25.0


@dataclass(frozen=True)
class PipelineBenchConfig:
    device: str = "auto"
    style: str | None = None
    cases: str | None = None         # comma list of _CASES names; None: all
    quick: bool = False
    batch_size: int = 1
    workers: int | None = None
    depth: int = 16
    codec: str = "auto"              # image codec (media.codecs)
    video_preset: str | None = None  # libx264 preset for both; None: the library's (media.options)
    video_crf: int = 23
    video_decoder: str = "cpu"       # media.options.VIDEO_DECODERS, for every video row alike
    output: str = str(DEFAULT_OUTPUT)
    workdir: str | None = None       # where the synthetic data goes (default: a temp folder)
    runs: int = 3                    # timed runs per provider; the row gives their median

    def __post_init__(self):
        if self.runs < 1:
            raise ValueError(f"--pipeline-runs must be ≥ 1, got {self.runs}")

    def names(self) -> list[str]:
        names = [n.strip() for n in self.cases.split(",") if n.strip()] if self.cases else list(_CASES)
        unknown = [n for n in names if n not in _CASES]
        if unknown:
            raise ValueError(f"--pipeline-cases: unknown {unknown}; choose from {list(_CASES)}")
        return names


@dataclass
class PipelineBenchResult:
    rows: list[Row] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_pipeline_bench(config: PipelineBenchConfig, log: Callable[[str], None] = lambda _: None) -> PipelineBenchResult:
    from ..api import get_stylizer
    from .endtoend import load_bench_style
    names = config.names()   # a bad case name fails before any data or weights are made
    result = PipelineBenchResult()
    run_id = new_run_id()
    with tempfile.TemporaryDirectory(dir=config.workdir) as tmp:
        work = Path(tmp)
        checkpoint, note = load_bench_style(config.style)
        if note:
            result.notes.append(note)
        from ..models.checkpoint import save_checkpoint
        weights = save_checkpoint(work / "style.safetensors", checkpoint.state_dict, checkpoint.metadata,
                                  dtype=torch.float32)
        options = StylizeOptions(checkpoint=str(weights), device=config.device,
                                 batch_size=config.batch_size, overwrite=True)
        stylizer = get_stylizer(options)
        for name in names:
            log(f"{name}: generating data")
            rows = _run_case(name, config, stylizer, options, work / name, log)
            for row in rows:
                row.stamp(run_id, stylizer.device.type)
            result.rows += rows
    _add_ratios(result.rows)   # needs every case's rows, so they are written once, at the end
    if result.rows:
        result.files = append_rows(result.rows, config.output)
    return result


def _run_case(name, config, stylizer, options, folder: Path, log) -> list[Row]:
    kind, count, sizes = _CASES[name]
    if config.quick:
        count, sizes = _QUICK[name]
    folder.mkdir(parents=True)
    workers = config.workers or _default_workers()
    preset = config.video_preset or DEFAULT_PRESETS["h264"]
    expect = _engine_picture(stylizer)
    if kind == "images":
        shapes = image_sizes(name, count, sizes, config.quick)
        files = [write_photo(folder / "in" / f"{i:04d}.jpg", w, h, i) for i, (w, h) in enumerate(shapes)]
        runs = {"pipeline": lambda: _time_images(files, folder / "out", stylizer, options, config),
                "floor": lambda: _timed(jpeg_floor, files, folder / "floor", options.quality, workers)}
        checks = {"pipeline": lambda: check_images(files, folder / "out", expect, IMAGE_PSNR_DB),
                  "floor": lambda: check_images(files, folder / "floor", _same, IMAGE_PSNR_DB)}
        warm = lambda: _time_images(files[:2], folder / "warm", stylizer, options, config)  # noqa: E731
    else:
        (w, h), = sizes
        shapes = [(w, h)] * count
        clip = write_clip(folder / "in.mp4", w, h, count)
        out, floor, styled = folder / "out.mp4", folder / "floor.mp4", folder / "restyled.mp4"
        runs = {"pipeline": lambda: _time_video(clip, out, stylizer, options, config),
                "floor": lambda: _timed(video_floor, clip, floor, preset, config.video_crf),
                # The plain transcode of the stylized output: painted frames cost the encoder more
                # than the camera's (more texture, more bits), so this is the floor for this output.
                "floor-styled": lambda: _timed(video_floor, out, styled, preset, config.video_crf)}
        checks = {"pipeline": lambda: check_video(clip, out, expect, VIDEO_PSNR_DB),
                  "floor": lambda: check_video(clip, floor, _same, VIDEO_PSNR_DB),
                  "floor-styled": lambda: check_video(out, styled, _same, VIDEO_PSNR_DB)}
        warm = lambda: _time_video(clip, folder / "warm.mp4", stylizer, options, config,  # noqa: E731
                                   duration=2 / VIDEO_FPS)
    pixels = sum(w * h for w, h in shapes)
    label = "mixed" if len(set(shapes)) > 1 else f"{shapes[0][0]}x{shapes[0][1]}"
    _warm(stylizer, shapes[0])
    # The codecs' one-time set-up (nvJPEG's handles and buffers, the encoder's first open, the
    # pipeline's streams) is paid before timing, as the engine's warm-up is: process start excluded.
    warm()
    engine_out: list = []
    runs["engine"] = lambda: _time_engine(stylizer, shapes, engine_out)
    checks["engine"] = lambda: _check_engine(engine_out, shapes)
    rows = []
    for provider in ("pipeline", "engine", "floor", "floor-styled"):
        if provider not in runs:
            continue
        log(f"{name}: {provider} × {config.runs}")
        row = Row(kind="pipeline", provider=provider, op=name, size=label, batch=config.batch_size,
                  dtype=str(stylizer.dtype).replace("torch.", ""), reps=len(shapes), timer="wall")
        try:
            seconds = sorted(runs[provider]() for _ in range(config.runs))
            check = checks[provider]()      # what the last run wrote
            median = float(np.median(seconds))
            row.fps, row.median_ms = len(shapes) / median, 1000 * median / len(shapes)
            row.notes = {"seconds": [round(t, 4) for t in seconds], "runs": config.runs,
                         "megapixels": round(pixels / 1e6, 2), "engine": stylizer.describe(),
                         "check": check.notes()}
            if provider != "engine":
                row.notes["workers"] = workers
            if kind == "video":
                row.notes.update(preset=preset, crf=config.video_crf)
            if not check.ok:
                row.status, row.error = "failed", f"output check: {check.problem()}"
        except Exception as exc:  # one provider failing must not hide the others' rows
            row.status, row.error = "failed", f"{type(exc).__name__}: {exc}"[:300]
        rows.append(row)
    return rows


def _default_workers() -> int:
    from ..media.pipeline import (
        default_workers,  # the floor gets the pipeline's thread count
    )
    return default_workers()


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _same(pixels: np.ndarray) -> np.ndarray:
    return pixels


def _engine_picture(stylizer):
    """HWC uint8 RGB → the engine's own stylized picture of it, as uint8: what a pipeline output
    must be close to (its codecs' rounding apart)."""
    def expect(pixels: np.ndarray) -> np.ndarray:
        content = torch.from_numpy(np.ascontiguousarray(pixels)).permute(2, 0, 1)[None].float()
        out = stylizer(content)[0].clamp(0, 255).round().to(torch.uint8)
        return out.permute(1, 2, 0).numpy()
    return expect


def _check_engine(outputs: list, shapes: list[tuple[int, int]]) -> Check:
    """The engine alone writes no file: its outputs' count and sizes, and that they are finite."""
    check = Check(count=len(outputs), expected=len(shapes))
    for got, (w, h) in zip(outputs, shapes):
        if tuple(got) != (1, 3, h, w):
            check.size_errors.append(f"{tuple(got)} for {w}x{h}")
    return check


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _warm(stylizer, size: tuple[int, int]) -> None:
    width, height = size
    stylizer(torch.rand(1, 3, height, width) * 255)


def _time_engine(stylizer, shapes: list[tuple[int, int]], outputs: list) -> float:
    """The engine alone: the same shapes in the same order, inputs already on the device; the
    output shapes of the last run go to `outputs`."""
    inputs = {(w, h): torch.rand(1, 3, h, w, device=stylizer.device) * 255 for w, h in set(shapes)}
    run = getattr(stylizer, "on_device", stylizer)
    _sync(stylizer.device)
    shapes_out = []
    start = time.perf_counter()
    for shape in shapes:
        shapes_out.append(run(inputs[shape]).shape)
    _sync(stylizer.device)
    seconds = time.perf_counter() - start
    outputs[:] = shapes_out
    return seconds


def _time_images(files: list[Path], out: Path, engine, options: StylizeOptions,
                 config: PipelineBenchConfig) -> float:
    from ..media.images import ImageJob, stylize_images
    from ..media.options import PipelineOptions
    pipeline = PipelineOptions(workers=config.workers, depth=config.depth, codec=config.codec)
    jobs = [ImageJob(path, out / path.name) for path in files]
    start = time.perf_counter()
    failed = [r.error for r in stylize_images(jobs, engine, options, pipeline) if r.error]
    seconds = time.perf_counter() - start
    if failed:
        raise RuntimeError(f"{len(failed)} images failed, first: {failed[0]}")
    return seconds


def _time_video(clip: Path, out: Path, engine, options: StylizeOptions,
                config: PipelineBenchConfig, duration: float | None = None) -> float:
    from ..media.options import PipelineOptions, VideoOptions
    from ..media.video import stylize_video
    video = VideoOptions(crf=config.video_crf, preset=config.video_preset, duration=duration,
                         decoder=config.video_decoder,
                         pipeline=PipelineOptions(workers=config.workers, depth=config.depth))
    start = time.perf_counter()
    stylize_video(clip, out, engine, options, video)
    return time.perf_counter() - start


def _add_ratios(rows: list[Row]) -> None:
    """pipeline ÷ the slower of engine and floor (bar ≥ 0.7); mixed ÷ its same-size twin (≥ 0.5)."""
    by = {(r.op, r.provider): r for r in rows if r.status == "ok"}
    for (case, provider), row in by.items():
        if provider != "pipeline":
            continue
        halves = [by[(case, p)].fps for p in ("engine", "floor") if (case, p) in by]
        if len(halves) == 2:
            row.notes["ratio_vs_slower"] = round(row.fps / min(halves), 3)
        if (case, "floor-styled") in by:
            row.notes["floor_styled_fps"] = round(by[(case, "floor-styled")].fps, 1)
            row.notes["ratio_vs_styled_floor"] = round(row.fps / by[(case, "floor-styled")].fps, 3)
        if case == "jpeg-mixed" and ("jpeg-mixed-ref", "pipeline") in by:
            row.notes["ratio_vs_same_size"] = round(row.fps / by[("jpeg-mixed-ref", "pipeline")].fps, 3)


def pipeline_table(rows: list[Row]):
    from rich.table import Table
    table = Table(title="media pipeline (items/s, median of the runs; ratio = pipeline ÷ slower of engine, floor)")
    for column in ("case", "size", "items", "pipeline/s", "engine/s", "floor/s", "ratio", "note"):
        table.add_column(column, justify="left" if column in ("case", "size", "note") else "right")
    cases = list(dict.fromkeys(r.op for r in rows))
    for case in cases:
        got = {r.provider: r for r in rows if r.op == case}
        first = next(iter(got.values()))

        def fps(provider: str) -> str:
            row = got.get(provider)
            if row is None:
                return "-"
            return f"{row.fps:.1f}" if row.status == "ok" else "failed"
        pipe = got.get("pipeline")
        notes = pipe.notes if pipe is not None else {}
        ratio = notes.get("ratio_vs_slower")
        extra = (f"mixed/same-size {notes['ratio_vs_same_size']:.2f}" if "ratio_vs_same_size" in notes
                 else f"plain transcode of the styled output {notes['floor_styled_fps']:.1f}/s "
                      f"(ratio {notes['ratio_vs_styled_floor']:.2f})" if "floor_styled_fps" in notes
                 else "; ".join(r.error for r in got.values() if r.error))
        table.add_row(case, first.size, str(first.reps), fps("pipeline"), fps("engine"), fps("floor"),
                      "-" if ratio is None else f"{ratio:.2f}", extra)
    return table
