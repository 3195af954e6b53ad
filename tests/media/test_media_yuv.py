"""The GPU path's YUV 4:2:0 ↔ RGB conversion against PyAV's swscale, on CPU, on smooth frames (as
video is). To RGB, swscale's unscaled path repeats chroma samples where ours interpolates: ours
lands nearer the picture the frame was made from, and within a few grey levels of swscale's."""
import numpy as np
import pytest
import torch

from styleforge.media.yuv import frame_tags, rgb_to_yuv420, yuv420_to_rgb

av = pytest.importorskip("av")


def smooth_rgb(height=48, width=64):
    from PIL import Image
    rng = np.random.default_rng(3)
    small = rng.integers(30, 226, (4, 5, 3), dtype=np.uint8)
    return np.asarray(Image.fromarray(small).resize((width, height), Image.BICUBIC))


@pytest.mark.parametrize("full", [False, True])
def test_yuv_to_rgb_matches_swscale(full):
    rgb = np.array(smooth_rgb())
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(
        format="yuv420p", dst_color_range=2 if full else 1)
    planes = frame.to_ndarray()
    want = frame.reformat(format="rgb24", src_color_range=2 if full else 1).to_ndarray().astype(float)
    got = yuv420_to_rgb(torch.from_numpy(planes)[None], 48, 64, "bt601", full)[0].permute(1, 2, 0).numpy()
    assert np.abs(got - rgb).mean() <= np.abs(want - rgb).mean()
    assert np.abs(got - want).mean() < 3.0


@pytest.mark.parametrize("full", [False, True])
def test_rgb_to_yuv_matches_swscale(full):
    rgb = np.array(smooth_rgb())
    want = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(
        format="yuv420p", dst_color_range=2 if full else 1).to_ndarray().astype(int)
    got = rgb_to_yuv420(torch.from_numpy(rgb).permute(2, 0, 1)[None].float(), "bt601", full)[0].numpy()
    assert np.abs(got.astype(int) - want).mean() < 1.0


@pytest.mark.parametrize("matrix", ["bt601", "bt709"])
def test_round_trip_keeps_the_picture(matrix):
    rgb = torch.from_numpy(smooth_rgb()).permute(2, 0, 1)[None].float()
    back = yuv420_to_rgb(rgb_to_yuv420(rgb, matrix), 48, 64, matrix)
    assert (back - rgb).abs().mean() < 2.0


def test_frame_tags():
    assert frame_tags(1, 1, "yuv420p") == ("bt709", False)
    assert frame_tags(2, 0, "yuv420p") == ("bt601", False)
    assert frame_tags(5, 2, "yuv420p") == ("bt601", True)
    assert frame_tags(None, None, "yuvj420p") == ("bt601", True)


def test_nv12_reads_as_the_same_picture_as_yuv420p():
    """NVDEC hands over NV12 (chroma interleaved): the same frame in either layout converts alike."""
    frame = av.VideoFrame.from_ndarray(np.array(smooth_rgb()), format="rgb24").reformat(format="yuv420p")
    planar = torch.from_numpy(frame.to_ndarray())[None]
    nv12 = torch.from_numpy(frame.reformat(format="nv12").to_ndarray())[None]
    assert not torch.equal(planar, nv12)
    want = yuv420_to_rgb(planar, 48, 64)
    got = yuv420_to_rgb(nv12, 48, 64, nv12=True)
    assert torch.equal(got, want)
