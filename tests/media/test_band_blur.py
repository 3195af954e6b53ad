"""The GPU blend's blurs (`media.band_blur`) equal the convolutions they replaced: the batched-GEMM
Gaussian equals the 1×K then K×1 depthwise convolution computed in float64 (the package's
tolerance rule, and within 1e-3 of a level on 0–255 data) on the blend's own plane shapes and the
named edge shapes; `SeparableBlur` takes the GEMMs on full-size planes (the feather's too) and the
convolution on small ones. CPU tensors here, CUDA where there is one (1080p and 4K planes only there)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from conftest import assert_matches_reference

from styleforge.media.band_blur import SMALL_PLANE, SeparableBlur, band_matrix, conv_blur, fits, gemm_blur

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def gaussian(sigma: float, size: int | None = None) -> torch.Tensor:
    size = size if size is not None else round(sigma * 8 + 1) | 1   # the blend's rule (cv2's, ±4σ)
    return torch.from_numpy(cv2.getGaussianKernel(size, sigma, ktype=cv2.CV_32F).ravel())


def planes(shape, device, seed=0) -> torch.Tensor:
    """Signed 0–255-scale data with detail at every scale, as the blend's `change` has."""
    g = torch.Generator().manual_seed(seed)
    coarse = torch.nn.functional.interpolate(torch.rand((1, shape[0], 8, 8), generator=g), size=shape[1:],
                                             mode="bilinear", align_corners=False)[0]
    return ((coarse - 0.5) * 300 + (torch.rand(shape, generator=g) - 0.5) * 120).to(device)


def assert_blur_matches(image: torch.Tensor, sigma: float, block: int = 64):
    taps = gaussian(sigma)
    got = gemm_blur(image, taps.to(image.device), band_matrix(taps, block).to(image.device))
    reference = conv_blur(image.double(), taps.double().to(image.device))
    assert_matches_reference(got, reference)
    assert (got.double() - reference).abs().max() < 1e-3   # levels
    return got


# (C, H, W, σ): the 1080p blend's detail blur (σ 2.625) and energy window (1.31) on a crop,
# its band blur's 1/8 level (6 channels), one channel, odd sides, sides not divisible by 4 or by
# the block, a side shorter than the block.
SHAPES = {
    "detail-3ch": (3, 150, 260, 2.625),
    "window-2ch-odd": (2, 131, 197, 1.3125),
    "band-level-6ch": (6, 135, 240, 2.58),
    "one-channel-wide-sigma": (1, 160, 300, 5.25),
    "sides-not-multiple-of-4": (3, 122, 178, 1.9),
    "side-under-a-block": (2, 130, 60, 1.0),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block", [32, 64])
@pytest.mark.parametrize("case", list(SHAPES))
def test_gemm_blur_equals_the_float64_convolution(case, block, device):
    channels, height, width, sigma = SHAPES[case]
    assert fits((height, width), gaussian(sigma).numel() // 2, block)   # the GEMM path, not the fallback
    got = assert_blur_matches(planes((channels, height, width), device), sigma, block)
    assert got.shape == (channels, height, width)


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_blur_of_a_non_contiguous_view_and_of_a_small_plane(device):
    # A channel slice of a (6, H, W) buffer (the restore's `both`) and a transposed plane.
    both = planes((6, 97, 143), device, seed=1)
    assert_blur_matches(both[3:], 2.625)
    assert_blur_matches(both[:2].transpose(1, 2), 1.5)
    # Too small to pad out to whole blocks: the convolution itself, the same result.
    assert not fits((30, 44), 10)
    assert_blur_matches(planes((3, 30, 44), device), 2.5)


def test_gemm_blur_matches_opencv():
    # The reference of the reference: cv2.GaussianBlur in float64, reflect-101 borders.
    image = planes((3, 140, 210), "cpu", seed=2)
    sigma = 2.625
    got = gemm_blur(image, gaussian(sigma), band_matrix(gaussian(sigma))).permute(1, 2, 0).double().numpy()
    size = round(sigma * 8 + 1) | 1
    expected = cv2.GaussianBlur(image.permute(1, 2, 0).double().numpy(), (size, size), sigma)
    assert np.abs(got - expected).max() < 1e-3


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(3, 1080, 1920, 2.625), (2, 1080, 1920, 1.3125), (2, 2160, 3840, 2.625),
                                   (1, 2160, 3840, 2.625)], ids=["1080p-detail", "1080p-window", "4k-window",
                                                                 "4k-one-channel"])
def test_gemm_blur_on_full_frames_on_cuda(shape):
    *size, sigma = shape
    assert_blur_matches(planes(tuple(size), "cuda"), sigma)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(1, 270, 480), (6, 135, 240), (1, 61, 83)], ids=["feather", "level", "tiny"])
def test_separable_blur_takes_the_gemms_on_full_planes_and_the_conv_on_small_ones(shape, device):
    """The feather (cv2's σ-0 taps on a 0/1 mask) at a frame's size takes the GEMMs; a pyramid
    level's plane and a tiny one the convolution. Each call is exactly its path's result, and
    both paths are the float64 convolution within the package's tolerance."""
    taps = gaussian(0.0, 5) if shape[0] == 1 else gaussian(2.58)
    g = torch.Generator().manual_seed(shape[1])
    image = (torch.rand(shape, generator=g) > 0.6).float().to(device) if shape[0] == 1 else planes(shape, device)
    blur = SeparableBlur(taps, device)
    large = shape[1] * shape[2] >= SMALL_PLANE
    assert blur.gemm(shape) == large and large == (shape == (1, 270, 480))
    got = blur(image)
    path = (gemm_blur(image, taps.to(device), band_matrix(taps).to(device)) if large
            else conv_blur(image, taps.to(device)))
    assert torch.equal(got, path)
    assert_matches_reference(got, conv_blur(image.double(), taps.double().to(device)))


def test_band_matrix_holds_the_taps_on_its_diagonals():
    taps = gaussian(1.5)
    band = band_matrix(taps, 16)
    radius = taps.numel() // 2
    assert band.shape == (16 + 2 * radius, 16)
    for j in range(16):
        assert torch.equal(band[j:j + 2 * radius + 1, j], taps)
        assert torch.count_nonzero(band[:, j]) == taps.numel()   # nothing else in the column
