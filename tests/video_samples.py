"""Small H.264 videos for the media and app tests (not a test module): random frames, several
video streams, or an MKV whose header claims another length."""
from __future__ import annotations

import struct
from fractions import Fraction

import av
import numpy as np

FPS = 12


def write_video(path, frames=12, streams=1, options=None):
    """Random 32×24 H.264 frames at 12 fps (no audio), in `streams` identical video streams."""
    rng = np.random.default_rng(0)
    with av.open(str(path), "w", options=options or {}) as out:
        videos = []
        for _ in range(streams):
            video = out.add_stream("libx264", rate=FPS)
            video.width, video.height, video.pix_fmt = 32, 24, "yuv420p"
            video.options = {"preset": "ultrafast"}
            videos.append(video)
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, FPS)
            for video in videos:
                for packet in video.encode(frame):
                    out.mux(packet)
        for video in videos:
            for packet in video.encode(None):
                out.mux(packet)
    return path



def lying_mkv(path, frames: int, claimed_ms: float):
    """An MKV of `frames` frames whose Segment Info says it lasts `claimed_ms`."""
    write_video(path, frames=frames)
    data = path.read_bytes()
    at = data.find(b"\x44\x89\x88")               # EBML Duration, an 8-byte float
    assert at > 0
    path.write_bytes(data[:at + 3] + struct.pack(">d", claimed_ms) + data[at + 11:])
    return path
