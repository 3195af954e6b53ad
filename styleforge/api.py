"""The Python API: `stylize`, `stylize_files`, `stylize_video`, `load_style`, `list_styles`.
The CLI is a thin layer over this; `stylize_files` writes files under the same plan and names
as `styleforge stylize` (`styleforge.jobs`).

`stylize` returns the kind of image it was given:

| input                              | output                                                                   |
|------------------------------------|--------------------------------------------------------------------------|
| path (str / os.PathLike)           | PIL image (RGB, or RGBA when the file has alpha); nothing is written     |
| PIL image, any mode                | PIL image: RGBA/LA/PA/transparent palette → RGBA, every other mode → RGB |
| numpy (H, W) or (H, W, C), C∈1,3,4 | numpy (H, W, 3), or (H, W, 4) with the alpha kept                        |
| torch (C, H, W) or (N, C, H, W)    | same layout with C = 3 (or 4, alpha kept), same device                   |

Arrays and tensors keep their kind of value: uint8 → uint8 0–255, float → the same float dtype in [0, 1].

Grey inputs come back as RGB because a style adds colour. An image with no pixels, float
pixels that are NaN or inf, or a style whose output is not finite raise an error instead of
returning a black image (`engine.checks`). Paths get their EXIF orientation
applied; PIL images, arrays and tensors are taken as they are. `max_side` resizes paths and PIL
images only: arrays and tensors keep their shape. Style precedence: blend > checkpoint > style.
Loaded `Stylizer`s are cached per options (an LRU of a few), so repeated calls do not reload
weights; `clear_cache()` frees them. A painting as `style` (a PIL image, a path to an image file,
or a list of (painting, weight) pairs) runs the arbitrary-style model (`engine/arbitrary.py`);
a .safetensors/.pth path stays a checkpoint.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from .engine.checks import require_finite_input, require_finite_output, require_pixels
from .engine.options import StylizeOptions
from .engine.pipeline import Stylizer
from .io.image import LoadedImage, load_image, pil_to_tensor, split_alpha, tensor_to_pil
from .models import registry
from .models.checkpoint import build_model
from .models.transformer_net import TransformerNet

# Fields that change how files are read or written, not what the engine computes.
_IO_FIELDS = ("overwrite", "quality", "chroma", "max_side", "max_pixels", "batch_size")
_DEFAULTS = StylizeOptions()


def make_options(style: str | os.PathLike | None = None, options: StylizeOptions | None = None,
                 **option_fields: Any) -> StylizeOptions:
    """`options` (or the defaults) with `style` and any named fields replaced, validated."""
    if style is not None:
        option_fields["style"] = os.fspath(style)
    base = options or _DEFAULTS
    return dataclasses.replace(base, **option_fields) if option_fields else base


@functools.lru_cache(maxsize=4)
def _cached_stylizer(engine_options: StylizeOptions, styles_dir: Path) -> Stylizer:
    # styles_dir is part of the key only: the same name may mean another file in another folder.
    return Stylizer(engine_options)


@functools.lru_cache(maxsize=2)
def _cached_arbitrary(engine_options: StylizeOptions):
    from .engine.arbitrary import ArbitraryStylizer
    return ArbitraryStylizer(engine_options)


def get_arbitrary_engine(options: StylizeOptions):
    """The (cached) arbitrary-style engine; paintings are bound per call, not part of the key."""
    key = dataclasses.replace(options, style_images=(),
                              **{f: getattr(_DEFAULTS, f) for f in _IO_FIELDS if f != "max_pixels"})
    return _cached_arbitrary(key)


def get_stylizer(options: StylizeOptions) -> Stylizer:
    """The (cached) engine for these options; I/O-only fields do not make a new one."""
    if options.style_images:
        return get_arbitrary_engine(options).bind(list(options.style_images))
    key = dataclasses.replace(options, **{f: getattr(_DEFAULTS, f) for f in _IO_FIELDS})
    return _cached_stylizer(key, registry.current_styles_dir())


def clear_cache() -> None:
    _cached_stylizer.cache_clear()
    _cached_arbitrary.cache_clear()


def is_painting(style: Any) -> bool:
    from .io.suffixes import SCAN_SUFFIXES
    return isinstance(style, Image.Image) or (
        isinstance(style, (str, os.PathLike)) and Path(style).suffix.lower() in SCAN_SUFFIXES)


def _painting_list(style: Any) -> list | None:
    """style → [(painting, weight)] when it names paintings, else None (a style or checkpoint)."""
    if is_painting(style):
        return [(style, 1.0)]
    if isinstance(style, (list, tuple)) and style and all(
            isinstance(item, tuple) and len(item) == 2 and is_painting(item[0]) for item in style):
        return [(p, w) for p, w in style]   # weights checked when bound (engine.arbitrary)
    return None


def run_batches(stylizer: Stylizer, images: torch.Tensor, batch_size: int) -> torch.Tensor:
    """float (N, 3, H, W) in 0–255 → the same, `batch_size` images at a time."""
    return torch.cat([stylizer(chunk) for chunk in images.split(batch_size)])


def stylize(image: Any, style: Any = None, *,
            options: StylizeOptions | None = None, **option_fields: Any) -> Any:
    """Stylize a path, PIL image, numpy array or torch tensor; returns the same kind (see above).

    `style` is a built-in name or a checkpoint path (None: the default style), or a painting
    (PIL image, image file path, or [(painting, weight), ...]) for the arbitrary-style model;
    any `StylizeOptions` field may be given by name, e.g. `strength=0.7, device="cpu", alpha=0.8`.
    """
    paintings = _painting_list(style)
    opts = make_options(None if paintings else style, options, **option_fields)
    stylizer = get_arbitrary_engine(opts).bind(paintings) if paintings else None
    if isinstance(image, (str, os.PathLike)):
        stylizer = stylizer or get_stylizer(opts)   # refuses, from the header alone, what the budget cannot run
        check = getattr(stylizer, "check_size", None)
        return _stylize_loaded(load_image(image, opts.max_pixels, opts.max_side, check=check), opts, stylizer)
    if isinstance(image, Image.Image):
        require_pixels(image.height, image.width, "the PIL image")
        rgb, alpha = split_alpha(image)
        return _stylize_loaded(LoadedImage(rgb, alpha, image.mode), opts, stylizer)
    if isinstance(image, np.ndarray):
        return _stylize_array(image, opts, stylizer)
    if isinstance(image, torch.Tensor):
        return _stylize_tensor(image, opts, stylizer)
    raise TypeError(f"stylize() takes a path, PIL image, numpy array or torch tensor, "
                    f"not {type(image).__name__}")


def _stylize_loaded(loaded: LoadedImage, opts: StylizeOptions, stylizer=None) -> Image.Image:
    loaded = loaded.resized(opts.max_side)
    stylizer = stylizer or get_stylizer(opts)
    out = stylizer(pil_to_tensor(loaded.rgb))
    require_finite_output(out, stylizer.style_name)
    return loaded.merged(tensor_to_pil(out))


def _stylize_array(array: np.ndarray, opts: StylizeOptions, stylizer=None) -> np.ndarray:
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3:
        raise ValueError(f"expected an (H, W) or (H, W, C) array, got shape {array.shape}")
    out = _stylize_tensor(torch.tensor(array).permute(2, 0, 1), opts, stylizer)  # copy: may be read-only
    return out.permute(1, 2, 0).numpy()


def _stylize_tensor(tensor: torch.Tensor, opts: StylizeOptions, stylizer=None) -> torch.Tensor:
    if tensor.dim() not in (3, 4) or tensor.shape[-3] not in (1, 3, 4):
        raise ValueError("expected a (C, H, W) or (N, C, H, W) tensor with C in 1, 3, 4, "
                         f"got shape {tuple(tensor.shape)}")
    if tensor.dtype == torch.uint8:
        scale = 1.0
    elif tensor.dtype.is_floating_point:
        scale = 255.0
    else:
        raise TypeError(f"expected a uint8 or floating-point tensor, got {tensor.dtype}")
    require_pixels(tensor.shape[-2], tensor.shape[-1], "the input")
    require_finite_input(tensor, "the input")
    batch = tensor if tensor.dim() == 4 else tensor.unsqueeze(0)
    colour, alpha = batch[:, :3], (batch[:, 3:] if batch.shape[1] == 4 else None)
    content = colour.detach().cpu().float() * scale
    if content.shape[1] == 1:
        content = content.expand(-1, 3, -1, -1)
    stylizer = stylizer or get_stylizer(opts)
    out = run_batches(stylizer, content, opts.batch_size) if len(content) else content.clone()
    require_finite_output(out, stylizer.style_name)
    if tensor.dtype == torch.uint8:
        out = out.round().clamp(0, 255).to(torch.uint8)
    else:
        out = (out / 255.0).to(tensor.dtype)
    out = out.to(tensor.device)
    if alpha is not None:
        out = torch.cat([out, alpha.detach()], dim=1)
    return out if tensor.dim() == 4 else out[0]


def stylize_video(src: str | os.PathLike, dst: str | os.PathLike, style: str | os.PathLike | None = None,
                  *, options: StylizeOptions | None = None, progress: Any = None,
                  frame_filter: Any = None, **fields: Any):
    """Stylize the video `src` into `dst` (audio, subtitles and metadata kept); returns a
    `media.video.VideoResult` (output, frames, seconds, fps, notes).

    `fields` are `StylizeOptions` fields, `VideoOptions` fields (codec, crf, preset, start,
    duration, temporal: the strength of the flicker-reducing blend, 0 = off, temporal_flow: dis or
    torch (its flows on the GPU), temporal_flow_preset/size/threads, temporal_flow_check: False
    computes the backward flow alone, decoder: cpu or cuda) and
    `PipelineOptions` fields (workers, depth).
    `progress(done, total_or_None)` is called after each frame; `frame_filter(content, stylized)`
    (uint8 H×W×3 arrays) → uint8 array runs on each frame in order before it is encoded.
    Raises `media.VideoError` with a one-line message for unreadable or broken input.
    """
    from .media.options import PipelineOptions, VideoOptions
    from .media.video import stylize_video as run_video
    names = {f.name for f in dataclasses.fields(VideoOptions)} - {"pipeline"}
    video_fields = {name: fields.pop(name) for name in list(fields) if name in names}
    pipeline_fields = {name: fields.pop(name) for name in ("workers", "depth") if name in fields}
    opts = make_options(style, options, **fields)
    video = VideoOptions(**video_fields, pipeline=PipelineOptions(**pipeline_fields))
    return run_video(src, dst, get_stylizer(opts), opts, video, progress=progress,
                     frame_filter=frame_filter)


def stylize_files(inputs: Any, output: str | os.PathLike | None = None, style: Any = None, *,
                  recursive: bool = False, keep_names: bool = False,
                  options: StylizeOptions | None = None, progress: Any = None, **fields: Any):
    """Stylize image files and write the results, as `styleforge stylize INPUTS -o OUTPUT` does:
    the same plan (`styleforge.jobs`), so the same output names, skips and exactly-once writes.

    `inputs` is a path or a list of files, folders and glob patterns; `output` None writes
    beside each input (`photo_<style>.jpg`, folder `trip/` → `trip_<style>/`), a name with an
    image suffix is one output file, anything else a folder. `style` as in `stylize` (a name,
    checkpoint path or painting); `fields` are `StylizeOptions` fields (e.g. strength, overwrite,
    device) and `PipelineOptions` fields (workers, depth, codec). `progress(done, total)` is
    called after each written (or failed, or skipped-meanwhile) file.

    Returns a `jobs.RunReport`: `.records` (one `media.Record` per input: output, error, skipped,
    notes), `.done`, `.skipped`, `.failed`. A bad -o or an unusable style raises ValueError;
    one bad file fails alone, in its record.
    """
    from .jobs import RunReport, done_records, plan_jobs, refused_records, run_jobs
    from .media.options import PipelineOptions
    pipeline_names = {f.name for f in dataclasses.fields(PipelineOptions)}
    pipeline = PipelineOptions(**{name: fields.pop(name) for name in list(fields) if name in pipeline_names})
    paintings = _painting_list(style)
    if paintings:   # the plan names outputs by the paintings' file names
        if not all(isinstance(p, (str, os.PathLike)) for p, _ in paintings):
            raise ValueError("stylize_files names outputs after the painting's file: "
                             "pass the painting as a path, not a PIL image")
        fields["style_images"] = tuple((os.fspath(p), float(w)) for p, w in paintings)
    opts = make_options(None if paintings else style, options, **fields)
    sources = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    plan = plan_jobs(sources, output, opts, recursive=recursive, keep_names=keep_names)
    todo = plan.pending(opts.overwrite)
    report = RunReport(refused_records(plan) + done_records(plan, todo))
    if todo:
        stylizer = get_stylizer(opts)
        for finished, record in enumerate(run_jobs(todo, stylizer, opts, pipeline), 1):
            report.records.append(record)
            if progress is not None:
                progress(finished, len(todo))
    return report


def load_style(name_or_path: str | os.PathLike) -> TransformerNet:
    """A built-in style name or checkpoint path → the network (CPU, float32, eval mode).

    The checkpoint's metadata (painting, artist, licence, training settings) is in
    `styleforge.models.registry.load_style(name).metadata`.
    """
    return build_model(registry.load_style(os.fspath(name_or_path)))


def list_styles() -> list[registry.StyleInfo]:
    """The built-in styles (name, path, painting, artist, licence), sorted by name."""
    return registry.list_styles()
