"""Image codecs for the pipeline: Pillow on CPU threads everywhere, nvJPEG on the GPU where it is.

The GPU path is torchvision.io's `decode_jpeg`/`encode_jpeg` on a CUDA device (nvJPEG). It is
optional: chosen automatically when torchvision imports and the engine runs on CUDA, never a
dependency. It takes only what it keeps exactly as the Pillow path would: a baseline RGB (YCbCr)
JPEG with no ICC profile and no EXIF rotation, and writes only `.jpg`/`.jpeg` outputs that need
no alpha and no ICC profile. Anything else (PNG, CMYK, 16-bit, alpha, rotated, ICC) takes the
Pillow path in `styleforge.io.image`. Decode runs on the pipeline's decode workers and encode on
its encode workers, one image a call (torchvision serialises the calls). The two decoders differ
by IDCT rounding and, at 4:2:0, chroma upsampling (libjpeg-turbo interpolates, nvJPEG's output
fits replication): a grey level or two on photos, more where colour changes within a few pixels
(dev/diag/jpeg_chroma_model.py), as `tests/media` checks on CUDA.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import torch
from PIL import Image

from ..engine.capture import cuda_work
from .options import CODECS  # noqa: E402,F401  (re-exported)

_JPEG_MAGIC = b"\xff\xd8\xff"
_EXIF_ORIENTATION = 0x0112


@dataclass
class JpegData:
    """An undecoded JPEG that a decode worker hands to nvJPEG."""
    data: bytes
    width: int
    height: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, 3)


def gpu_jpeg_available(device: torch.device) -> tuple[bool, str]:
    """(usable, reason) for nvJPEG through torchvision.io on `device`."""
    if device.type != "cuda":
        return False, "GPU JPEG needs the engine on a CUDA device"
    try:
        from torchvision.io import decode_jpeg, encode_jpeg  # noqa: F401
    except Exception as exc:  # not installed, or built for another torch
        return False, f"torchvision.io unavailable ({type(exc).__name__}: {exc})"
    return True, "torchvision.io nvJPEG"


# 'auto' takes nvJPEG only for at least this many images: importing torchvision (which pulls in
# torch._dynamo) and nvJPEG's set-up cost seconds, more than Pillow spends on a few photos.
GPU_JPEG_MIN_ITEMS = 8


def resolve_codec(codec: str, device: torch.device, items: int | None = None) -> str:
    """'auto' → 'gpu' where nvJPEG is usable and `items` (None: unknown, many) is at least
    GPU_JPEG_MIN_ITEMS, else 'pillow'; 'gpu' where nvJPEG is not usable is an error."""
    if codec not in CODECS:
        raise ValueError(f"codec must be one of {CODECS}, got {codec!r}")
    if codec == "pillow" or (codec == "auto" and items is not None and items < GPU_JPEG_MIN_ITEMS):
        return "pillow"
    ok, reason = gpu_jpeg_available(device)
    if codec == "gpu" and not ok:
        raise RuntimeError(f"--codec gpu is unavailable: {reason}")
    return "gpu" if ok else "pillow"


def gpu_decodable(data: bytes, max_pixels: int | None, max_side: int | None) -> JpegData | None:
    """A `JpegData` when nvJPEG would give what `load_image` gives, else None (Pillow's turn)."""
    if not data.startswith(_JPEG_MAGIC):
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:  # header only
            width, height = image.size
            if (image.format != "JPEG" or image.mode != "RGB" or "icc_profile" in image.info
                    or image.getexif().get(_EXIF_ORIENTATION, 1) != 1
                    or (max_pixels is not None and width * height > max_pixels)
                    or (max_side is not None and max(width, height) > max_side)):
                return None
    except Exception:  # let the Pillow path produce the one-line error
        return None
    return JpegData(data, width, height)


@dataclass
class DeviceImage:
    """uint8 (3, H, W) pixels on the GPU, valid once `ready` (a CUDA event) has fired."""
    tensor: torch.Tensor
    ready: object

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.tensor.shape[1], self.tensor.shape[2], 3)


def decode_jpeg_gpu(item: JpegData, device: torch.device, stream) -> DeviceImage:
    """nvJPEG on a decode worker: the image lands on `device`, allocated on `stream` (kept for
    decodes only, so no other work is pending on the memory the decoder's own stream writes)."""
    from torchvision.io import ImageReadMode, decode_jpeg
    raw = torch.frombuffer(bytearray(item.data), dtype=torch.uint8)
    with cuda_work(), torch.cuda.stream(stream):   # engine.capture: not while a graph is captured
        image, = decode_jpeg([raw], mode=ImageReadMode.RGB, device=device)
        ready = torch.cuda.Event()
        ready.record(stream)
    return DeviceImage(image, ready)


# torchvision's CUDA encoder sets nvJPEG's sampling factors to 4:4:4 and has no option for others.
GPU_CHROMA = "444"


def encode_jpeg_gpu(image: DeviceImage, quality: int) -> bytes:
    """nvJPEG on an encode worker. torchvision's encoder runs on a stream of its own that does not
    wait for the caller's, so the host waits for the pixels first (this worker, not the engine)."""
    from torchvision.io import encode_jpeg
    with cuda_work():
        image.ready.synchronize()
        data, = encode_jpeg([image.tensor], quality=quality)
        return bytes(data.cpu().numpy())
