"""The pipeline benchmark's inputs, generated at run time: smooth photo-like pictures written as JPEG
(one size, or the mixed folder's spread of sizes and its same-size reference) and H.264 + AAC clips
of a pan over such a picture. Deterministic by seed; no timing here (`bench/pipeline.py` times).
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

MIXED_SIZES, MIXED_RANGE, QUICK_MIXED_RANGE = 50, (800, 4000), (24, 120)
VIDEO_FPS = 30


def image_sizes(name: str, count: int, sizes, quick: bool) -> list[tuple[int, int]]:
    """(w, h) per file: `sizes` repeated, or for "jpeg-mixed" `MIXED_SIZES` sizes across the range
    (portrait and landscape, shuffled) and for "jpeg-mixed-ref" one 4:3 size of their mean pixels."""
    if sizes is not None:
        return sizes * count
    rng = np.random.default_rng(0)
    low, high = QUICK_MIXED_RANGE if quick else MIXED_RANGE
    distinct = min(MIXED_SIZES, count)
    longs = np.linspace(low, high, distinct).round().astype(int)
    aspects = rng.choice([4 / 3, 3 / 2, 16 / 9, 1.0], distinct)
    mixed = [(int(l_), max(16, int(l_ / a)) // 4 * 4) if i % 2 else (max(16, int(l_ / a)) // 4 * 4, int(l_))
             for i, (l_, a) in enumerate(zip(longs, aspects))]
    mixed = [mixed[i % distinct] for i in range(count)]
    if name == "jpeg-mixed":
        return [mixed[i] for i in rng.permutation(count)]
    side = int(np.sqrt(np.mean([w * h for w, h in mixed]) * 3 / 4))  # a 4:3 photo of the mean pixels
    return [(side * 4 // 3 // 4 * 4, side // 4 * 4)] * count


def photo(width: int, height: int, seed: int) -> np.ndarray:
    """A smooth, photo-like picture (JPEG sizes and decode times like a photo's, not noise's)."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (max(2, height // 64), max(2, width // 64), 3), dtype=np.uint8)
    base = np.asarray(Image.fromarray(small).resize((width, height), Image.BICUBIC), dtype=np.int16)
    grain = rng.integers(-6, 7, (height, width, 1), dtype=np.int16)
    return np.clip(base + grain, 0, 255).astype(np.uint8)


def write_photo(path: Path, width: int, height: int, seed: int) -> Path:
    from PIL import Image
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(photo(width, height, seed % 7)).save(path, quality=90)
    return path


def write_clip(path: Path, width: int, height: int, frames: int) -> Path:
    """H.264 (camera-like pan over a photo) + AAC tone, as a phone would record it."""
    import av
    picture = photo(width + frames * 4, height, 0)
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=VIDEO_FPS)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": "ultrafast", "crf": "18"}
        sound = out.add_stream("aac", rate=48000)
        sound.layout = "stereo"
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(picture[:, 4 * i:4 * i + width]),
                                               format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, VIDEO_FPS)
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        samples = 48000 * frames // VIDEO_FPS
        tone = (0.2 * np.sin(2 * np.pi * 440 * np.arange(samples) / 48000)).astype(np.float32)
        for start in range(0, samples, 1024):
            chunk = np.ascontiguousarray(np.stack([tone[start:start + 1024]] * 2))
            audio = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
            audio.sample_rate, audio.pts, audio.time_base = 48000, start, Fraction(1, 48000)
            for packet in sound.encode(audio):
                out.mux(packet)
        for packet in sound.encode(None):
            out.mux(packet)
    return path
