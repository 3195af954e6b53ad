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


def run(tmp_path, codec, files, suffix=None):
    import styleforge.api as api
    from styleforge.engine.options import StylizeOptions
    from styleforge.media.images import ImageJob, stylize_images
    from styleforge.media.options import PipelineOptions
    options = StylizeOptions(device="cuda", batch_size=2)
    out = tmp_path / f"{codec}{suffix or ''}"
    names = [f.with_suffix(suffix).name if suffix else f.name for f in files]
    jobs = [ImageJob(f, out / name) for f, name in zip(files, names)]
    records = list(stylize_images(jobs, api.get_stylizer(options), options, PipelineOptions(codec=codec)))
    assert all(r.error is None for r in records), records
    return [np.asarray(Image.open(out / name)).astype(int) for name in names]


def test_cuda_pipeline_equals_the_one_image_path(styles_env, tmp_path):
    import styleforge
    files = [photo(tmp_path / f"{i}.png", (40 + 4 * (i % 2), 36), seed=i) for i in range(6)]
    got = run(tmp_path, "pillow", files)
    for f, image in zip(files, got):
        # A batch of two may take other cuDNN algorithms than one image: one grey level at most.
        assert np.abs(image - np.asarray(styleforge.stylize(f, device="cuda"))).max() <= 1


def test_nvjpeg_decode_matches_pillow(tmp_path):
    """The decoders differ by IDCT rounding (4:4:4: under a grey level on average) and, for 4:2:0,
    by chroma upsampling too (libjpeg-turbo's triangular 'fancy' filter vs nvJPEG's): 1.5 grey
    levels on this photo's sharp colour changes on an H200, bound at 2."""
    pytest.importorskip("torchvision")
    import torch

    from styleforge.media.codecs import decode_jpeg_gpu
    for subsampling in (0, 2):
        path = photo(tmp_path / f"s{subsampling}.jpg", (256, 192), subsampling=subsampling)
        want = np.asarray(Image.open(path)).astype(int)
        image = decode_jpeg_gpu(gpu_decodable(path.read_bytes(), None, None), torch.device("cuda"),
                                torch.cuda.Stream())
        image.ready.synchronize()
        got = image.tensor.permute(1, 2, 0).cpu().numpy().astype(int)
        assert np.abs(got - want).mean() < (1.0 if subsampling == 0 else 2.0), subsampling


def test_nvjpeg_within_codec_tolerance_of_pillow(styles_env, tmp_path):
    """End to end against the lossless result (Pillow decode, PNG out): the GPU codecs lose no more
    than Pillow's JPEG path does, within a grey level. Both write 4:4:4 chroma."""
    pytest.importorskip("torchvision")
    files = [photo(tmp_path / f"{i}.jpg", seed=i) for i in range(4)]
    exact = run(tmp_path, "pillow", files, suffix=".png")
    pillow, gpu = run(tmp_path, "pillow", files), run(tmp_path, "gpu", files)
    for e, a, b in zip(exact, pillow, gpu):
        assert np.abs(b - e).mean() <= np.abs(a - e).mean() + 1.0


def test_gpu_encoder_writes_the_chroma_asked_for(styles_env, tmp_path):
    """nvJPEG (torchvision) only writes 4:4:4; asked for 4:2:0, the pipeline encodes with Pillow."""
    pytest.importorskip("torchvision")
    import styleforge.api as api
    from styleforge.engine.options import StylizeOptions
    from styleforge.io.image import jpeg_chroma
    from styleforge.media.images import ImageJob, stylize_images
    from styleforge.media.options import PipelineOptions
    src = photo(tmp_path / "in.jpg")
    for chroma in ("444", "420"):
        options = StylizeOptions(device="cuda", chroma=chroma)
        target = tmp_path / f"out{chroma}.jpg"
        records = list(stylize_images([ImageJob(src, target)], api.get_stylizer(options), options,
                                      PipelineOptions(codec="gpu")))
        assert records[0].error is None and jpeg_chroma(target) == chroma


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
