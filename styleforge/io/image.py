"""Safe image reading and writing, and the one place where tensors, PIL images and arrays meet.

Reading takes any file Pillow can open (grey, RGBA, LA, palette with or without transparency,
CMYK, 16-bit, WebP, …), applies the EXIF orientation, refuses absurd pixel counts from the
header before anything is decoded, and turns every way a file can be bad (empty, truncated,
corrupt, not an image, decompression bomb) into one `ImageError` that names the file. A file of
several frames (animated GIF/WebP/PNG, multi-page TIFF) gives its first frame with a warning that
says so (`LoadedImage.frames` holds the count). Writing is atomic and durable
(`styleforge.io.atomic`: temp file, fsync, rename, fsync the folder), so a partial output never
exists under the final name. This module does no stylization; the value-range contract it
serves is the engine's: float (N, 3, H, W) in 0–255 (`styleforge.engine.pipeline`).
"""
from __future__ import annotations

import contextlib
import io
import os
import stat
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np
import torch
from PIL import Image, ImageOps

_ALPHA_FORMATS = frozenset({"PNG", "WEBP", "TIFF", "GIF", "TGA", "JPEG2000"})
_SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})


class MultiFrameWarning(UserWarning):
    """An animated or multi-page file of which only the first frame is used."""


class ImageError(ValueError):
    """An input or output image that cannot be used; the message names the file and the reason."""


class OutputExists(ImageError):
    """The output appeared after the run was planned (another run wrote it) and is kept."""


@dataclass
class LoadedImage:
    """A decoded image split into what the network sees and what it must not touch."""
    rgb: Image.Image                  # mode "RGB", EXIF orientation applied
    alpha: Image.Image | None         # mode "L", same size, or None when the source had none
    source_mode: str                  # the file's own Pillow mode, e.g. "P", "I;16", "CMYK"
    icc_profile: bytes | None = None  # kept only for RGB sources, where it still describes the pixels
    frames: int = 1                   # frames/pages in the file; only the first is here

    @property
    def size(self) -> tuple[int, int]:
        return self.rgb.size

    def resized(self, max_side: int | None) -> LoadedImage:
        """Downscale (Lanczos, aspect kept) so the longer side is at most `max_side`."""
        size = fitted_size(*self.size, max_side)
        if size == self.size:
            return self
        alpha = self.alpha.resize(size, Image.LANCZOS) if self.alpha is not None else None
        return LoadedImage(self.rgb.resize(size, Image.LANCZOS), alpha, self.source_mode,
                           self.icc_profile, self.frames)

    def merged(self, rgb: Image.Image) -> Image.Image:
        """`rgb` (same size) with this image's alpha re-attached, if it had one."""
        if self.alpha is None:
            return rgb
        out = rgb.convert("RGBA")
        out.putalpha(self.alpha)
        return out


def split_alpha(image: Image.Image) -> tuple[Image.Image, Image.Image | None]:
    """Any Pillow mode → (RGB image, L alpha or None)."""
    mode = image.mode
    if mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        return rgba.convert("RGB"), rgba.getchannel("A")
    if mode in _SIXTEEN_BIT_MODES:
        # Pillow's I;16 → L conversion clips at 255 instead of scaling; scale 0–65535 → 0–255.
        wide = np.asarray(image, dtype=np.float64)
        grey = np.clip(np.rint(wide / 257.0), 0, 255).astype(np.uint8)
        return Image.fromarray(grey).convert("RGB"), None
    if mode == "RGB":
        return image, None
    return image.convert("RGB"), None


def fitted_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """(width, height) after `LoadedImage.resized(max_side)`."""
    if max_side is None or max(width, height) <= max_side:
        return width, height
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def open_image_file(path: Path) -> BinaryIO:
    """The file opened for reading, or ImageError naming the real cause: missing, no
    permission, a folder, or not a regular file (a FIFO or device never ends or blocks)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise ImageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise ImageError(f"{path}: is a folder, not an image file")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        raise ImageError(f"{path}: is {kind}, not an image file; pipe an image in with '-' instead")
    if info.st_size == 0:
        raise ImageError(f"{path}: empty file")
    try:
        return open(path, "rb")
    except OSError as exc:
        raise ImageError(f"{path}: cannot read ({exc.strerror or exc})") from None


_PILLOW_LIMIT = Image.MAX_IMAGE_PIXELS   # Pillow's own: a warning above it, an error above twice it
_limit_lock = threading.Lock()
_active_limits: list[int] = []


@contextlib.contextmanager
def _pillow_allows(max_pixels: int | None):
    """Pillow's decompression-bomb limit raised, while this block runs, to what `max_pixels` lets
    through: the caller's limit governs, checked from the header before decoding, and Pillow's
    (2 × 89 MP) must not refuse an image it allows. Pillow reads one module global, so concurrent
    loads (decode workers) share the largest limit asked for; each still applies its own."""
    if max_pixels is None or _PILLOW_LIMIT is None or max_pixels <= 2 * _PILLOW_LIMIT:
        yield
        return
    with _limit_lock:
        _active_limits.append(max_pixels)
        Image.MAX_IMAGE_PIXELS = -(-max(_active_limits) // 2)
    try:
        yield
    finally:
        with _limit_lock:
            _active_limits.remove(max_pixels)
            Image.MAX_IMAGE_PIXELS = -(-max(_active_limits) // 2) if _active_limits else _PILLOW_LIMIT


def load_image(path: str | os.PathLike, max_pixels: int | None = None, max_side: int | None = None,
               check=None, data: bytes | None = None, warn_frames: bool = True) -> LoadedImage:
    """Decode `path` (or `data`, the file's bytes, named `path` in errors, e.g. "stdin") safely;
    every failure is an `ImageError` naming the file.

    `max_side`: the caller will downscale to this; a JPEG is then decoded at the smallest DCT
    scale (1/2, 1/4, 1/8) that is still at least that big (Pillow's `draft`), which saves
    memory and time on large photos. `check(width, height)`, called with the size the caller
    will get before anything is decoded, may refuse the image by raising (e.g. the engine's
    memory budget); its message becomes the `ImageError`'s. `warn_frames=False`: a file of
    several frames gives no `MultiFrameWarning` (the caller reports `frames` itself).
    """
    path = Path(path)
    if data is not None and len(data) == 0:
        raise ImageError(f"{path}: empty file")
    source = io.BytesIO(data) if data is not None else open_image_file(path)
    try:
        with source, warnings.catch_warnings(), _pillow_allows(max_pixels):
            # We enforce our own pixel limit below; Pillow's warning would only be noise.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(source) as image:  # lazy: reads the header only
                width, height = image.size
                if width < 1 or height < 1:
                    raise ImageError(f"{path}: image has no pixels ({width}×{height})")
                if max_pixels is not None and width * height > max_pixels:
                    raise ImageError(f"{path}: {width}×{height} = {width * height:,} pixels is over "
                                     f"the limit of {max_pixels:,} pixels; refused before decoding")
                frames = int(getattr(image, "n_frames", 1) or 1)
                target = fitted_size(width, height, max_side)
                if check is not None:
                    check(*target)
                if image.format == "JPEG" and target != (width, height):
                    image.draft(image.mode, target)
                image.load()
                source_mode = image.mode
                icc = image.info.get("icc_profile") if source_mode in ("RGB", "RGBA") else None
                oriented = ImageOps.exif_transpose(image)
                rgb, alpha = split_alpha(oriented)
    except ImageError:
        raise
    except RuntimeError as exc:   # the check's refusal, e.g. the engine's MemoryBudgetError
        raise ImageError(f"{path}: {exc}") from None
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{path}: refused as a decompression bomb ({exc})") from None
    except Image.UnidentifiedImageError:
        raise ImageError(f"{path}: not an image file Pillow can read") from None
    except MemoryError:
        raise ImageError(f"{path}: not enough memory to decode this image") from None
    except Exception as exc:  # Pillow's decoders raise OSError, SyntaxError, ValueError, EOFError…
        raise ImageError(f"{path}: truncated or corrupt image ({type(exc).__name__}: {exc})") from None
    if frames > 1 and warn_frames:
        warnings.warn(multi_frame_message(path, frames), MultiFrameWarning, stacklevel=2)
    return LoadedImage(rgb, alpha, source_mode, icc, frames)


def multi_frame_message(path: str | os.PathLike, frames: int) -> str:
    return (f"{path}: has {frames} frames or pages; only the first is used "
            "(split it into single images to stylize every frame)")


def format_for(path: str | os.PathLike) -> str:
    """The Pillow format name that the output suffix asks for, e.g. '.jpg' → 'JPEG'."""
    suffix = Path(path).suffix.lower()
    # Pillow's common formats (JPEG, PNG, BMP, GIF, PPM) first: all forty plugins load only for
    # another suffix, which keeps a JPEG-to-JPEG run's start short.
    Image.preinit()
    fmt = Image.EXTENSION.get(suffix)
    if fmt is None or fmt not in Image.SAVE:
        fmt = Image.registered_extensions().get(suffix)
    if fmt is None or fmt not in Image.SAVE:
        raise ImageError(f"{path}: cannot write images with suffix {suffix!r}")
    return fmt


def holds_alpha(fmt: str) -> bool:
    return fmt in _ALPHA_FORMATS


# Pillow's `subsampling` codes; its own default for JPEG is 4:2:0.
_SUBSAMPLING = {"444": 0, "422": 1, "420": 2}


def save_params(fmt: str, quality: int, chroma: str = "444", icc_profile: bytes | None = None) -> dict:
    """Pillow `save` keywords: quality for JPEG/WebP, chroma sampling for JPEG, the ICC profile."""
    params: dict = {}
    if fmt in ("JPEG", "WEBP"):
        params["quality"] = quality
    if fmt == "JPEG":
        params["subsampling"] = _SUBSAMPLING[chroma]
    if icc_profile:
        params["icc_profile"] = icc_profile
    return params


def jpeg_chroma(source: str | os.PathLike | bytes) -> str | None:
    """The chroma sampling of a JPEG file (or its bytes) as "444", "422", "420", or None when it is
    not a three-component JPEG or has another layout. Read from the frame header's factors."""
    from PIL import JpegImagePlugin
    with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as image:
        if image.format != "JPEG" or len(image.layer) != 3:
            return None
        code = JpegImagePlugin.get_sampling(image)
    return {v: k for k, v in _SUBSAMPLING.items()}.get(code)


def save_image(image: Image.Image, path: str | os.PathLike, quality: int = 95,
               icc_profile: bytes | None = None, chroma: str = "444", replace: bool = True) -> Path:
    """Write atomically in the format of the suffix; alpha is dropped where the format has none.
    JPEGs get `chroma` sampling (default full, 4:4:4).

    Returns the path written. Raises `ImageError` (unknown suffix, encoder failure, disk full),
    or `OutputExists` when `replace` is False and `path` exists by the time the file is written,
    and leaves neither a partial file nor a temp file behind.
    """
    path = Path(path)
    fmt = format_for(path)
    return atomic_write(path, lambda handle: encode_into(handle, image, fmt, quality, chroma, icc_profile), replace)


def encode_into(handle: BinaryIO, image: Image.Image, fmt: str, quality: int = 95, chroma: str = "444",
                icc_profile: bytes | None = None) -> None:
    """Encode `image` as `fmt` into `handle` (a file or a BytesIO): alpha dropped where the format
    has none, JPEG at `chroma` sampling, the ICC profile kept (what every writer of outputs uses)."""
    if image.mode == "RGBA" and not holds_alpha(fmt):
        image = image.convert("RGB")
    image.save(handle, format=fmt, **save_params(fmt, quality, chroma, icc_profile))


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None], replace: bool = True) -> Path:
    """Call `write(handle)` on a temp file beside `path`, fsync it and rename it to `path`
    (`io.atomic`); on any failure raise `ImageError` naming `path` and leave no partial file."""
    from .atomic import atomic_write as durable_write

    def fill(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            write(handle)
    try:
        return durable_write(path, fill, replace=replace)
    except FileExistsError as exc:
        raise OutputExists(str(exc.strerror or exc)) from None
    except OSError as exc:  # already "<path>: cannot write (<reason>)", no temp name
        raise ImageError(str(exc.strerror or exc)) from None
    except Exception as exc:  # the encoder's own errors
        raise ImageError(f"{path}: could not encode ({type(exc).__name__}: {exc})") from None


# --- conversions: PIL / numpy uint8 HWC ↔ engine tensors (float, N×3×H×W, 0–255) ------------

def pil_to_tensor(image: Image.Image) -> torch.Tensor:
    """RGB PIL image → float32 (1, 3, H, W) in 0–255."""
    return array_to_tensor(np.asarray(image.convert("RGB")))


def tensor_to_pil(tensor: torch.Tensor) -> Image.Image:
    """(1, 3, H, W) or (3, H, W) in 0–255 → RGB PIL image (rounded, clamped)."""
    return Image.fromarray(tensor_to_array(tensor))


def array_to_tensor(array: np.ndarray) -> torch.Tensor:
    """uint8 (H, W, 3) → float32 (1, 3, H, W) in 0–255 (copied: PIL's arrays are read-only)."""
    return torch.tensor(array).permute(2, 0, 1).unsqueeze(0).float()


def tensor_to_array(tensor: torch.Tensor) -> np.ndarray:
    """(1, 3, H, W) or (3, H, W) float in 0–255 → uint8 (H, W, 3).

    NaN would become 0 here (a black image written with success), so non-finite values are an
    ImageError instead: every written image passes through this conversion."""
    if tensor.dim() == 4:
        tensor = tensor[0]
    if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
        raise ImageError("the stylized image holds NaN or inf values (damaged style weights?); "
                         "nothing was written; try another style or --precision fp32")
    return tensor.detach().round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).cpu().numpy()
