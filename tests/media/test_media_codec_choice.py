"""Which image codec the pipeline picks, on this (CPU) machine: Pillow, and a clear error for
`--codec gpu`; `gpu_decodable` takes only plain RGB JPEGs (its CPU-side half)."""
import io

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.media.codecs import gpu_decodable, resolve_codec


def jpeg(**save):
    buffer = io.BytesIO()
    Image.fromarray(np.full((20, 30, 3), 90, np.uint8)).save(buffer, format="JPEG", **save)
    return buffer.getvalue()


def test_cpu_engine_uses_pillow_and_gpu_is_refused_clearly():
    assert resolve_codec("auto", torch.device("cpu")) == "pillow"
    with pytest.raises(RuntimeError, match="--codec gpu is unavailable"):
        resolve_codec("gpu", torch.device("cpu"))


def test_auto_keeps_a_few_photos_off_nvjpeg(monkeypatch):
    from styleforge.media import codecs
    cuda = torch.device("cuda")
    monkeypatch.setattr(codecs, "gpu_jpeg_available", lambda device: (True, "pretend nvJPEG"))
    assert resolve_codec("auto", cuda) == "gpu"                      # a stream of unknown length
    assert resolve_codec("auto", cuda, codecs.GPU_JPEG_MIN_ITEMS) == "gpu"
    assert resolve_codec("auto", cuda, 1) == "pillow"               # one photo: no torchvision import
    assert resolve_codec("gpu", cuda, 1) == "gpu"                   # asked for: always
    monkeypatch.setattr(codecs, "gpu_jpeg_available", lambda device: (False, "no torchvision"))
    assert resolve_codec("auto", cuda) == "pillow"


def test_only_plain_rgb_jpegs_go_to_the_gpu_decoder():
    plain = gpu_decodable(jpeg(), None, None)
    assert plain is not None and plain.shape == (20, 30, 3)
    assert gpu_decodable(jpeg(), 100, None) is None          # over --max-pixels: Pillow's error
    assert gpu_decodable(jpeg(icc_profile=b"\0" * 32), None, None) is None
    assert gpu_decodable(b"\x89PNG\r\n", None, None) is None
    assert gpu_decodable(b"\xff\xd8\xff garbage", None, None) is None
