"""The web app's event handlers: check what a request sent, call the library, shape the reply.

Each handler maps widget values to library calls and nothing more: images go through
`io.image.load_image` (limits, EXIF, alpha) and `regions.stylize_regions` (the shared engine),
an uploaded painting through `PaintingEngine` (the one arbitrary-style model), videos through
`styleforge.stylize_video` (imported when first used), training through `TrainingJob`. Every
way a request can be wrong ends as one `gr.Error` that names the upload and the fix; a failure
never stops the server. Style names from clients are accepted only if they are built-in
styles, since the library would also take them as file paths.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
from PIL import Image

from ..io.image import ImageError, load_image, save_image
from ..models.registry import list_styles
from ..notices import engine_notices
from ..regions import Look, stylize_regions
from ..training import TrainConfig
from .files import AppFiles, UploadError, safe_stem
from .inflight import InFlight
from .options import ServeOptions
from .painting import PaintingEngine
from .training_job import TrainingJob

WHOLE, INSIDE, TWO_STYLES = "Whole image", "Only the painted region", "Style A inside, B outside"
REGION_MODES = (WHOLE, INSIDE, TWO_STYLES)
BROWSER_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".gif"})


def refuse(message: str) -> gr.Error:
    """The error a client is shown for a request that is wrong (or a server that is stopping):
    one line in the server's log, not a traceback per rejected request."""
    print(f"refused: {message}", file=sys.stderr, flush=True)
    return gr.Error(message, print_exception=False)


class Handlers:
    def __init__(self, options: ServeOptions, files: AppFiles, device_type: str):
        self.options = options
        self.files = files
        self.device_type = device_type
        self.style_names = [s.name for s in list_styles()]
        self.job = TrainingJob()
        self.painting = PaintingEngine(options.device, options.precision, options.backend,
                                       options.max_pixels)
        # The engine requests, tracked so that a shutdown answers each waiting client.
        self.inflight = InFlight(refuse)
        self.stylize = self.inflight.wrap(self.stylize)
        self.video = self.inflight.wrap(self.video)
        self.webcam = self.inflight.wrap(self.webcam)

    # -- shared checks ------------------------------------------------------------------------
    def _style(self, name: Any, role: str = "style") -> str:
        if name not in self.style_names:
            raise refuse(f"unknown {role} {name!r}; pick one of: {', '.join(self.style_names)}")
        return name

    def _engine_kwargs(self) -> dict:
        o = self.options
        return dict(device=o.device, precision=o.precision, backend=o.backend)

    def _load(self, payload: Any) -> tuple[Image.Image, str, Path]:
        try:
            path, display = self.files.upload(payload, self.options.max_upload_bytes)
            loaded = load_image(path, self.options.max_pixels)
        except UploadError as exc:
            raise refuse(str(exc)) from None
        except ImageError as exc:
            raise refuse(str(exc).replace(str(path), display) +
                           " — upload a JPEG, PNG or WebP photo") from None
        return loaded.merged(loaded.rgb), display, path

    def _mask(self, editor: Any) -> Image.Image | None:
        """The union of the painted layers' alpha (None when nothing was painted)."""
        layers = (editor or {}).get("layers") or [] if isinstance(editor, dict) else []
        mask = None
        for layer in layers:
            try:
                path, _ = self.files.upload(layer, self.options.max_upload_bytes, "mask layer")
                with Image.open(path) as image:
                    alpha = np.asarray(image.convert("RGBA"))[..., 3] > 0
            except (UploadError, OSError, ValueError):
                raise refuse("the painted mask could not be read; clear it and paint again") from None
            mask = alpha if mask is None else mask | (alpha if alpha.shape == mask.shape else False)
        if mask is None or not mask.any():
            return None
        return Image.fromarray(mask.astype(np.uint8) * 255)

    def _looks(self, style, style_b, blend, strength, preserve, mode) -> tuple[Look, Look | None]:
        a = self._style(style)
        b = self._style(style_b, "second style") if style_b else None
        try:
            if mode == TWO_STYLES:
                if b is None:
                    raise refuse("pick a second style (B) for outside the painted region")
                return (Look(a, strength=float(strength), preserve_color=bool(preserve)),
                        Look(b, strength=float(strength), preserve_color=bool(preserve)))
            return Look(a, b, float(blend or 0.0), float(strength), bool(preserve)), None
        except ValueError as exc:
            raise refuse(str(exc)) from None

    # -- image tab ----------------------------------------------------------------------------
    def editor_background(self, payload: Any) -> Any:
        """The uploaded photo as the mask editor's background (nothing painted yet)."""
        if not payload:
            return None
        try:
            path, _ = self.files.upload(payload, self.options.max_upload_bytes)
        except UploadError:
            return None
        return {"background": str(path), "layers": [], "composite": str(path)}

    def _painted(self, photo: Image.Image, payload: Any, strength, preserve):
        """→ (result, name suffix) in the uploaded painting's style; strength is the model's alpha."""
        try:
            path, display = self.files.upload(payload, self.options.max_upload_bytes, "painting")
        except UploadError as exc:
            raise refuse(str(exc)) from None
        try:
            result = self.painting.stylize(photo, path, float(strength), bool(preserve))
        except ImageError as exc:
            raise refuse(str(exc).replace(str(path), display) +
                           " — upload a JPEG, PNG or WebP painting") from None
        except ValueError as exc:               # strength outside [0, 1]
            raise refuse(str(exc)) from None
        result.engine = f"painting {display}: {result.engine}"
        return result, safe_stem(display, "painting")

    def stylize(self, image, style, style_b, blend, strength, preserve, mode, editor, painting=None):
        """→ (before/after pair, full-resolution PNG for download, timing line). A painting,
        when given, replaces the built-in style(s)."""
        photo, display, source = self._load(image)
        if mode not in REGION_MODES:
            raise refuse(f"unknown region mode {mode!r}")
        if painting and mode != WHOLE:
            raise refuse("a painting as the style works on the whole image only: choose "
                           "'Whole image', or clear the painting to use the built-in styles")
        # A style's first CPU use prepares its OpenVINO network (about a minute): say so in the page.
        with engine_notices(gr.Info, this_thread_only=True):
            if painting:
                result, suffix = self._painted(photo, painting, strength, preserve)
            else:
                result, suffix = self._regions(photo, style, style_b, blend, strength, preserve, mode, editor)
        out = save_image(result.image, self.files.new_output(f"{safe_stem(display)}_{suffix}", ".png"))
        # Files, not PIL images: Gradio caches PIL outputs by content hash without an atomic
        # rename, so identical concurrent results could be served half-written.
        before = source if source.suffix.lower() in BROWSER_SUFFIXES else \
            save_image(photo, out.with_name(f"{out.stem}_before.png"))
        width, height = result.image.size
        info = (f"**{result.seconds * 1000:.0f} ms** on the {self.device_type.upper()} · "
                f"{width}×{height} px · {result.engine}")
        return (str(before), str(out)), str(out), info

    def _regions(self, photo, style, style_b, blend, strength, preserve, mode, editor):
        """→ (result, name suffix) with the built-in look(s), inside the painted mask if asked."""
        inside, outside = self._looks(style, style_b, blend, strength, preserve, mode)
        mask = None
        if mode != WHOLE:
            mask = self._mask(editor)
            if mask is None:
                raise refuse("paint the region first (Region tab: brush over the photo), "
                               "or choose 'Whole image'")
        result = stylize_regions(photo, inside, mask=mask, outside=outside, **self._engine_kwargs())
        return result, inside.style

    # -- webcam -------------------------------------------------------------------------------
    def webcam(self, frame, style, strength, preserve):
        if frame is None:
            return None
        image = Image.fromarray(np.asarray(frame)[..., :3])
        side = self.options.webcam_max_side
        if max(image.size) > side:
            image.thumbnail((side, side), Image.BILINEAR)
        look = Look(self._style(style), strength=float(strength), preserve_color=bool(preserve))
        return np.asarray(stylize_regions(image, look, **self._engine_kwargs()).image)

    # -- video --------------------------------------------------------------------------------
    def video(self, payload, style, style_b, blend, strength, preserve, progress=gr.Progress()):
        try:
            from styleforge import stylize_video
        except ImportError:
            raise refuse("video needs styleforge.stylize_video, which this install lacks; "
                           "update styleforge") from None
        if isinstance(payload, dict) and "video" in payload:
            payload = payload["video"]
        try:
            path, display = self.files.upload(payload, self.options.max_upload_bytes, "video")
        except UploadError as exc:
            raise refuse(str(exc)) from None
        seconds = video_seconds(path)
        if seconds is None:
            raise refuse(f"{display}: not a video file that can be read — upload an MP4, WebM or MOV")
        if seconds > self.options.max_video_seconds:
            raise refuse(f"{display}: {seconds:.1f} s is over this server's limit of "
                           f"{self.options.max_video_seconds:g} s; trim it first")
        look, _ = self._looks(style, style_b, blend, strength, preserve, WHOLE)
        options = look.weights_options(**self._engine_kwargs())
        dst = self.files.new_output(f"{safe_stem(display)}_{look.style}", ".mp4")

        def report(done: int, total: int | None) -> None:
            progress((done, total), desc="stylizing frames", unit="frames")

        try:   # the limits again while decoding: the header's duration and size may lie
            stylize_video(str(path), str(dst), options=options, progress=report,
                          strength=look.strength, preserve_color=look.preserve_color,
                          max_pixels=self.options.max_pixels, max_seconds=self.options.max_video_seconds)
        except (ValueError, OSError) as exc:
            raise refuse(f"{display}: {exc}".replace(str(path), display)) from None
        return str(dst)

    # -- training -----------------------------------------------------------------------------
    def training_ready(self) -> str | None:
        """None when the tab can train, else the sentence that says why not."""
        if self.device_type != "cuda":
            return "Training a style needs a CUDA GPU; this server runs on the CPU."
        if not self.options.train_content_dir or not Path(self.options.train_content_dir).is_dir():
            return "Training needs a folder of content photos: start the server with --train-content-dir DIR."
        if not self.options.vgg_weights or not Path(self.options.vgg_weights).is_file():
            return "Training needs VGG16 weights: start the server with --vgg-weights FILE."
        return None

    def train_start(self, painting, name, steps):
        why = self.training_ready()
        if why:
            raise refuse(why)
        try:
            path, display = self.files.upload(painting, self.options.max_upload_bytes, "painting")
            load_image(path, self.options.max_pixels)
        except UploadError as exc:
            raise refuse(str(exc)) from None
        except ImageError as exc:
            raise refuse(str(exc).replace(str(path), display)) from None
        stem = safe_stem(name or display, "my_style")
        folder = self.files.new_output(stem, "").parent
        config = TrainConfig(style_image=str(path), content_dir=self.options.train_content_dir,
                             out=str(folder / f"{stem}.safetensors"), vgg_weights=self.options.vgg_weights,
                             steps=int(steps), checkpoint_every=0, sample_every=0, progress=False,
                             log_every=20, device=self.options.device if self.options.device != "auto" else "cuda",
                             metadata={"style": stem, "painting": display})
        try:
            self.job.start(config)
        except (RuntimeError, FileNotFoundError, ValueError) as exc:
            raise refuse(str(exc)) from None
        return self.train_poll()

    def train_poll(self):
        s = self.job.status()
        if s.state == "idle":
            return "No training job yet.", None, None
        percent = f" ({100 * s.step / s.total:.0f} %)" if s.total else ""
        text = f"**{s.state}** · step {s.step}/{s.total}{percent} · {s.message}"
        return text, s.preview, s.weights

    def train_cancel(self):
        self.job.cancel()
        return self.train_poll()


def video_seconds(path: str | os.PathLike) -> float | None:
    """The container's duration in seconds, or None when PyAV cannot open it as a video."""
    try:
        import av
    except ImportError:
        raise refuse("video needs PyAV: pip install 'styleforge[web]'") from None
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                return None
            if container.duration is not None:
                return container.duration / av.time_base
            stream = container.streams.video[0]
            if stream.duration is not None and stream.time_base is not None:
                return float(stream.duration * stream.time_base)
            return None
    except (av.error.FFmpegError, OSError, ValueError):
        return None
