"""CUDA parts of the media pipeline: pinned staging + the engine's own streams give the one-image
path's pixels; nvJPEG (torchvision.io) decodes and encodes within JPEG tolerance of
Pillow, and takes only the files it keeps as Pillow would. Skipped without CUDA."""
import io

import numpy as np
import pytest
from PIL import Image

from styleforge.media.codecs import gpu_decodable

pytestmark = pytest.mark.gpu


def photo(path, size=(64, 48), seed=0, **save):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
    Image.fromarray(small).resize(size, Image.BICUBIC).save(path, quality=92, **save)
    return path


def run(tmp_path, codec, files):
    import styleforge.api as api
    from styleforge.engine.options import StylizeOptions
    from styleforge.media.images import ImageJob, stylize_images
    from styleforge.media.options import PipelineOptions
    options = StylizeOptions(device="cuda", batch_size=2)
    out = tmp_path / codec
    jobs = [ImageJob(f, out / f.name) for f in files]
    records = list(stylize_images(jobs, api.get_stylizer(options), options, PipelineOptions(codec=codec)))
    assert all(r.error is None for r in records), records
    return [np.asarray(Image.open(out / f.name)).astype(int) for f in files]


def test_cuda_pipeline_equals_the_one_image_path(styles_env, tmp_path):
    import styleforge
    files = [photo(tmp_path / f"{i}.png", (40 + 4 * (i % 2), 36), seed=i) for i in range(6)]
    got = run(tmp_path, "pillow", files)
    for f, image in zip(files, got):
        # A batch of two may take other cuDNN algorithms than one image: one grey level at most.
        assert np.abs(image - np.asarray(styleforge.stylize(f, device="cuda"))).max() <= 1


def test_nvjpeg_within_codec_tolerance_of_pillow(styles_env, tmp_path):
    pytest.importorskip("torchvision")
    files = [photo(tmp_path / f"{i}.jpg", seed=i) for i in range(4)]
    pillow, gpu = run(tmp_path, "pillow", files), run(tmp_path, "gpu", files)
    for a, b in zip(pillow, gpu):
        assert np.abs(a - b).mean() < 3.0


def test_gpu_decode_refuses_what_it_would_not_keep(tmp_path):
    plain = photo(tmp_path / "plain.jpg").read_bytes()
    assert gpu_decodable(plain, None, None) is not None
    assert gpu_decodable(plain, None, 10) is None                      # needs a resize
    buffer = io.BytesIO()
    Image.open(io.BytesIO(plain)).save(buffer, format="JPEG", icc_profile=b"\0" * 64)
    assert gpu_decodable(buffer.getvalue(), None, None) is None          # ICC kept by Pillow
    exif = Image.Exif()
    exif[0x0112] = 6
    buffer = io.BytesIO()
    Image.open(io.BytesIO(plain)).save(buffer, format="JPEG", exif=exif)
    assert gpu_decodable(buffer.getvalue(), None, None) is None          # rotated by EXIF
    buffer = io.BytesIO()
    Image.open(io.BytesIO(plain)).convert("L").save(buffer, format="JPEG")
    assert gpu_decodable(buffer.getvalue(), None, None) is None          # grey
