"""Why nvJPEG's pipeline output is further from the lossless result than Pillow's on 4:2:0 inputs,
modelled on the CPU:

    python dev/diag/jpeg_chroma_model.py

nvJPEG's 4:2:0 decode is modelled as FFmpeg's decoded planes (PyAV) with each chroma sample
replicated over its 2×2 pixels, where libjpeg-turbo (Pillow) interpolates ("fancy" upsampling).
Prints, for tests/media/test_media_gpu_codecs.py's photos:
1. the model's decode against Pillow's, mean |Δ| in grey levels, at 4:4:4 and 4:2:0, at the
   decode test's 256×192 and the end-to-end tests' 64×48 (the device's nvJPEG gave 1.5 at
   256×192 4:2:0, the number this model is checked against);
2. per 64×48 4:2:0 photo, through the tests' random style 'alpha' (fp32, CPU): the output's change
   from the decode alone, Pillow's JPEG loss (quality 95, 4:4:4) on the lossless output, and the
   loss of the model's decode followed by Pillow's encoder: the end-to-end numbers that the GPU
   path gives with nvJPEG's encoder if the encoders quantise alike.
A dev tool: not imported by the package; needs PyAV.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import av
import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from conftest import random_net  # noqa: E402  (the tests' style 'alpha' is random_net(0))


def photo(size, seed=0, **save) -> bytes:
    """tests/media/test_media_gpu_codecs.py's photo(): 6×8 random colours, bicubic, quality 92."""
    small = np.random.default_rng(seed).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(small).resize(size, Image.BICUBIC).save(buffer, format="JPEG", quality=92, **save)
    return buffer.getvalue()


def replicated_chroma_decode(data: bytes) -> np.ndarray:
    """(H, W, 3) uint8: FFmpeg's Y, Cb, Cr planes, chroma replicated, JFIF's full-range BT.601."""
    frame, = av.CodecContext.create("mjpeg", "r").decode(av.Packet(data))
    y, cb, cr = (np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)[:, :p.width].astype(float)
                 for p in frame.planes)
    h, w = y.shape
    up = (lambda c: np.repeat(np.repeat(c, h // c.shape[0], 0), w // c.shape[1], 1) - 128)
    cb, cr = up(cb), up(cr)
    rgb = np.stack([y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb], -1)
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)


def pillow_decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def pillow_jpeg(pixels: np.ndarray, quality: int = 95) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=quality, subsampling=0)
    return np.asarray(Image.open(buffer))


def mean_error(a, b) -> float:
    return float(np.abs(np.asarray(a, dtype=int) - np.asarray(b, dtype=int)).mean())


def main():
    print("decode, model vs Pillow (mean |Δ| grey levels)")
    for size in [(256, 192), (64, 48)]:
        for subsampling, name in ((0, "4:4:4"), (2, "4:2:0")):
            data = photo(size, subsampling=subsampling)
            error = mean_error(replicated_chroma_decode(data), pillow_decode(data))
            print(f"  {size[0]}×{size[1]} {name}: {error:.2f}")
    net = random_net(0)

    def stylize(pixels):
        x = torch.from_numpy(pixels.astype(np.float32)).permute(2, 0, 1)[None]
        with torch.no_grad():
            return net(x)[0].permute(1, 2, 0).clamp(0, 255).round().to(torch.uint8).numpy()

    print("64×48 4:2:0 photos through style 'alpha': vs the lossless output of Pillow's decode")
    for seed in range(4):
        data = photo((64, 48), seed=seed)
        exact, modelled = stylize(pillow_decode(data)), stylize(replicated_chroma_decode(data))
        print(f"  seed {seed}: decode only {mean_error(modelled, exact):.2f}  "
              f"Pillow's JPEG {mean_error(pillow_jpeg(exact), exact):.2f}  "
              f"model decode + Pillow's JPEG {mean_error(pillow_jpeg(modelled), exact):.2f}")


if __name__ == "__main__":
    main()
