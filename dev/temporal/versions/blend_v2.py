"""Playground copy (never imported by the package): the torch blend as of 24c0e6c (pyramid
blurs through adaptive area pooling, 91 ops a 1080p blend), kept as the reference for
dev/temporal/profile_blend.py and compare_blends.py.

The temporal blend of `temporal.py` in PyTorch: on the engine's output, where it already is.

Same formula, masks and settings as `TemporalBlender` (read its docstring), which stays the exact
reference; this one is built to be cheap on the GPU. The masks map one to one: cv2.remap →
grid_sample (align_corners=True on pixel coordinates, border padding for BORDER_REPLICATE;
bicubic with A = −0.75 in both), cv2.resize (bilinear) → interpolate (align_corners=False),
cv2.erode → a min-pool with +∞ outside the frame, the feather's cv2.GaussianBlur → two 1-D
convolutions with cv2.getGaussianKernel's taps and reflect-101 padding. One sampling grid, built
once from the upscaled backward flow, serves all three warps and the inside-the-frame test.

The wide Gaussians (the detail blur G_σ, the restore's band G_R and energy window G_W: 8σ is
30 px at 1080p, 60 px at 4K) run on a pyramid level instead (`PyramidBlur`): area-downscale by
the largest power of two k that leaves σ/k ≥ MIN_SIGMA, blur by the remaining σ there, upscale
bilinearly. Their cost no longer grows with σ, and the restore's gain, a ratio of two smooth
energies, is formed on its level and upscaled once. The approximation is what separates the two
blenders beyond OpenCV's 1/32-px remap rounding (tests/media/test_temporal_torch.py states the
tolerance; docs/temporal.md the measurements).

It takes (3, H, W) float tensors in 0–255 on any device and the pair's flows at flow size
(`flow_ahead.pair_flows`, computed ahead on the CPU), and never reads a value back: the scene
cut is a `torch.where` on the device, so on CUDA the engine thread only issues work.
`restarts` and `trusted_fraction` are read (and synchronised) only when asked for.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from styleforge.media.temporal import FEATHER_SIGMA, TemporalSettings, restore_gain

MIN_SIGMA = 1.8   # px left to blur on a pyramid level; below ~2 the down/up-sampling's own shape shows


def _taps(sigma: float, device, size: int | None = None) -> torch.Tensor:
    size = size if size is not None else round(sigma * 8 + 1) | 1   # cv2's float-image rule, ±4σ
    return torch.from_numpy(cv2.getGaussianKernel(size, sigma, ktype=cv2.CV_32F).ravel()).to(device)


def _blur(image: torch.Tensor, taps: torch.Tensor) -> torch.Tensor:
    """(C, H, W) blurred by the separable kernel `taps` (K,), reflect-101 borders (cv2's default)."""
    channels, radius = image.shape[0], taps.numel() // 2
    x = F.pad(image[None], (radius, radius, radius, radius), mode="reflect")
    x = F.conv2d(x, taps.view(1, 1, 1, -1).expand(channels, 1, 1, -1), groups=channels)
    return F.conv2d(x, taps.view(1, 1, -1, 1).expand(channels, 1, -1, 1), groups=channels)[0]


def _upscale(image: torch.Tensor, size) -> torch.Tensor:
    return F.interpolate(image[None], size=tuple(size), mode="bilinear", align_corners=False)[0]


class PyramidBlur:
    """G_σ * x as blur(area-downscale(x, k), σ_k) upscaled bilinearly: k the largest power of two
    with σ/k ≥ MIN_SIGMA (k = 1: the exact blur). σ_k takes off the variance the area average
    (k² − 1)/12 and the bilinear upscale (about k²/6) add, so the whole stays σ wide."""

    def __init__(self, sigma: float, device):
        self.factor = 1
        while sigma / (2 * self.factor) >= MIN_SIGMA:
            self.factor *= 2
        k = self.factor
        self.sigma = math.sqrt(sigma * sigma - (k * k - 1) / 4.0) / k if k > 1 else sigma
        self.taps = _taps(self.sigma, device, None if k > 1 else round(sigma * 8 + 1) | 1)

    def down(self, image: torch.Tensor) -> torch.Tensor:
        """(C, H, W) → the blur on its level, (C, ⌈H/k⌉, ⌈W/k⌉)."""
        if self.factor > 1:
            height, width = image.shape[1:]
            size = (-(-height // self.factor), -(-width // self.factor))
            image = F.interpolate(image[None], size=size, mode="area")[0]
        return _blur(image, self.taps)

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        small = self.down(image)
        return small if self.factor == 1 else _upscale(small, image.shape[1:])


def sampling_grid(flows: torch.Tensor, size: tuple[int, int]) -> tuple[torch.Tensor, ...]:
    """(2, h, w, 2) pair flows at flow size → (forward, backward) at `size`, each (2, H, W) in px
    (bilinear, vectors scaled with the image: flow.resize_flow's twin), where the backward flow
    points, x + backward(x) (2, H, W) in px, and that as grid_sample's grid (1, H, W, 2) in
    [−1, 1]."""
    small = flows.permute(0, 3, 1, 2).reshape(1, 4, *flows.shape[1:3])
    if tuple(flows.shape[1:3]) != tuple(size):
        small = F.interpolate(small, size=size, mode="bilinear", align_corners=False)
    scale, pixels, to_grid = _grid_constants(tuple(flows.shape[1:3]), tuple(size), flows.device)
    flow = small[0] * scale
    target = flow[2:] + pixels
    grid = (target * to_grid - 1.0).permute(1, 2, 0)[None]
    return flow[:2], flow[2:], target, grid


@functools.lru_cache(maxsize=8)
def _grid_constants(flow_size: tuple[int, int], size: tuple[int, int], device: torch.device):
    """Per shape, made once (a tensor built on the GPU per frame would be a host-to-device copy
    per frame): the flows' scale to `size` (4, 1, 1), each pixel's (x, y) (2, H, W), and px →
    [−1, 1] (2, 1, 1)."""
    (h, w), (height, width) = flow_size, size
    scale = torch.tensor([width / w, height / h] * 2).view(4, 1, 1)
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32),
                            indexing="ij")
    to_grid = torch.tensor([2.0 / max(width - 1, 1), 2.0 / max(height - 1, 1)]).view(2, 1, 1)
    return scale.to(device), torch.stack([xs, ys]).to(device), to_grid.to(device)


def _sample(image: torch.Tensor, grid: torch.Tensor, mode: str = "bilinear") -> torch.Tensor:
    return F.grid_sample(image[None], grid, mode=mode, padding_mode="border", align_corners=True)[0]


def reliable(forward: torch.Tensor, backward: torch.Tensor, target: torch.Tensor,
             grid: torch.Tensor) -> torch.Tensor:
    """bool (H, W): flow.reliable's twin (not occluded, not on a motion boundary, match inside),
    on `sampling_grid`'s outputs. Inside is tested in px: in [−1, 1] a match a hair outside the
    frame could round onto its edge."""
    carried = _sample(forward, grid)
    norm = backward.square().sum(0)
    mismatch = (carried + backward).square().sum(0) > 0.01 * (carried.square().sum(0) + norm) + 0.5
    du = F.pad((backward[:, :, 1:] - backward[:, :, :-1]).square().sum(0), (0, 1))
    dv = F.pad((backward[:, 1:] - backward[:, :-1]).square().sum(0), (0, 0, 0, 1))
    boundary = du + dv > 0.01 * norm + 0.002
    height, width = target.shape[1:]
    inside = (target >= 0.0).all(0) & (target[0] <= width - 1) & (target[1] <= height - 1)
    return ~(mismatch | boundary) & inside


@dataclass
class TorchTemporalBlender(TemporalSettings):
    device: str | torch.device = "cpu"
    _feather_taps: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self):
        super().__post_init__()
        self.device = torch.device(self.device)
        self._feather_taps = _taps(FEATHER_SIGMA, self.device, 2 * self.feather + 1)
        self._detail = PyramidBlur(self.detail_px(), self.device) if self.detail_sigma else None
        if self.restores():
            (_, band), (_, window) = self.restore_blurs()
            self._band, self._window = PyramidBlur(band, self.device), PyramidBlur(window, self.device)
        self.reset()

    def reset(self) -> None:
        """Forget the history (a new clip, a new style, an engine rerun)."""
        self._content: torch.Tensor | None = None
        self._output: torch.Tensor | None = None
        self._restarts = torch.zeros((), dtype=torch.int64, device=self.device)
        self._trusted = torch.zeros((), device=self.device)

    @property
    def restarts(self) -> int:
        return int(self._restarts)

    @property
    def trusted_fraction(self) -> float:
        return float(self._trusted)

    def trust(self, content: torch.Tensor, previous: torch.Tensor,
              flows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(backward flow's grid (1, H, W, 2), float32 trust mask (H, W)) at the content's size."""
        forward, backward, target, grid = sampling_grid(flows, tuple(content.shape[1:]))
        difference = (content - _sample(previous, grid).round()).abs().amax(0)
        mask = (reliable(forward, backward, target, grid) & (difference <= self.photometric_tolerance)).float()
        if self.feather:   # erode (a min-pool; +∞ outside, as cv2.erode) then blur
            size = 2 * self.feather + 1
            mask = -F.max_pool2d(-mask[None, None], size, stride=1, padding=self.feather)[0]
            mask = _blur(mask, self._feather_taps)[0]
        return grid, mask

    def __call__(self, content: torch.Tensor, stylized: torch.Tensor,
                 flows: torch.Tensor | np.ndarray | None) -> torch.Tensor:
        """content: (3, H, W) input frame; stylized: (3, h, w) its stylization, both float 0–255 on
        `device` (stylized is rounded and clamped as its uint8 would be); flows: `pair_flows` from
        the previous content frame to this one, None restarts → the blended frame (3, h, w),
        float32 of whole numbers in 0–255."""
        for name, t in (("content", content), ("stylized", stylized)):
            if t.dim() != 3 or t.shape[0] != 3:
                raise ValueError(f"{name} must be (3, H, W), got {tuple(t.shape)}")
        content = content.float()
        current = stylized.float().round().clamp(0.0, 255.0)
        if (self.strength == 0.0 or flows is None or self._content is None
                or self._content.shape != content.shape or self._output.shape != current.shape):
            return self._keep(content, current)
        flows = torch.as_tensor(flows).to(self.device, torch.float32, non_blocking=True)
        grid, mask = self.trust(content, self._content, flows)
        trusted = mask.mean()
        if current.shape[1:] != content.shape[1:]:
            grid = sampling_grid(flows, tuple(current.shape[1:]))[3]
            mask = _upscale(mask[None], current.shape[1:])[0]
        change = _sample(self._output, grid, "bicubic") - current
        if self._detail is not None:
            change = self._detail(change)
        blended = torch.addcmul(current, mask, change, value=self.strength)
        if self.restores():
            blended = self._restore(current, blended)
        blended = blended.clamp_(0.0, 255.0)
        cut = (1.0 - trusted) > self.scene_cut
        self._restarts += cut
        self._trusted = trusted
        return self._keep(content, torch.where(cut, current, blended))

    def _restore(self, current: torch.Tensor, blended: torch.Tensor) -> torch.Tensor:
        """TemporalBlender._restore's twin: the fine band scaled back to the current frame's
        energy. Both frames go through each blur together; the gain is formed on the energy
        window's pyramid level and upscaled once."""
        both = torch.cat([current, blended])                              # (6, H, W)
        base = self._band(both)
        fine = both - base
        energy = fine.square().view(2, 3, *fine.shape[1:]).sum(1)         # (2, H, W)
        smooth = self._window.down(energy)
        gain = restore_gain(smooth[0:1], smooth[1:2])
        if self._window.factor > 1:
            gain = _upscale(gain, fine.shape[1:])
        return torch.addcmul(base[3:], gain, fine[3:])

    def _keep(self, content: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
        self._content = content
        self._output = output
        return output.round()
