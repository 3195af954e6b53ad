"""The temporal blend of `temporal.py` in PyTorch: on the engine's output, where it already is.

Same formula, masks and settings as `TemporalBlender` (read its docstring), which stays the exact
reference; this one is built to be cheap on the GPU. The masks map one to one: cv2.remap →
grid_sample (align_corners=True on pixel coordinates, border padding for BORDER_REPLICATE;
bicubic with A = −0.75 in both), cv2.resize (bilinear) → interpolate (align_corners=False),
cv2.erode → a max-pool of the untrusted pixels (−∞ outside, as cv2.erode's +∞ for the trusted),
every cv2.GaussianBlur → cv2.getGaussianKernel's taps with reflect-101 borders, run by
`band_blur.SeparableBlur` (on full-size planes each pass one batched GEMM against a band
matrix; on a pyramid level's small planes the depthwise convolution). One sampling
grid, built once from the upscaled backward flow, serves all three warps and the
inside-the-frame test.

The wide Gaussians (the detail blur G_σ, the restore's band G_R and energy window G_W: 8σ is
30 px at 1080p, 60 px at 4K) run on a pyramid level instead (`PyramidBlur`): area-downscale by
the largest power of two k that leaves σ/k ≥ MIN_SIGMA, blur by the remaining σ there, upscale
bilinearly. Their cost no longer grows with σ, and the restore's gain, a ratio of two smooth
energies, is formed on its level and upscaled once. The approximation is what separates the two
blenders beyond OpenCV's 1/32-px remap rounding (tests/media/test_temporal_torch.py states the
tolerance; docs/temporal.md the measurements).

Written for few kernels (each full-size pass at 1080p is 8 MB a plane; the op count, not the
arithmetic, sets the cost): the area downscale is a fixed-stride average pool where the sides
divide by k (the same bins as adaptive pooling, which is several times slower on CUDA); the
flow tests square and sum their five 2-vectors in one pass; the current frame and the blend
share one (6, H, W) buffer, so the restore's blurs see both without a copy; a scene cut zeroes
the trust mask instead of selecting whole frames afterwards.

It takes (3, H, W) float tensors in 0–255 on any device and the pair's flows at flow size
(`flow_ahead.pair_flows`, computed ahead on the CPU), and never reads a value back: the scene
cut is decided on the device, so on CUDA the engine thread only issues work.
`restarts` and `trusted_fraction` are read (and synchronised) only when asked for. Every method
that touches its tensors holds `engine.capture.cuda_work` (re-entrant; the engine stage holds it
already): its launches must not land inside another thread's graph capture, and a blur of a
plane too small for the GEMM blocks falls back to a convolution that may reach cuDNN, which may
autotune — a device-wide synchronisation that breaks a capture. On the CPU the lock costs nothing:
nothing captures there.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from ..engine.capture import cuda_work
from .band_blur import SeparableBlur
from .temporal import FEATHER_SIGMA, MAX_GAIN, TemporalSettings

MIN_SIGMA = 1.8   # px left to blur on a pyramid level; below ~2 the down/up-sampling's own shape shows


def _taps(sigma: float, size: int | None = None) -> np.ndarray:
    """cv2.getGaussianKernel's taps (K,) float32, on the CPU; size by cv2's float-image rule (±4σ)."""
    size = size if size is not None else round(sigma * 8 + 1) | 1
    return cv2.getGaussianKernel(size, sigma, ktype=cv2.CV_32F).ravel()


def _upscale(image: torch.Tensor, size) -> torch.Tensor:
    return F.interpolate(image[None], size=tuple(size), mode="bilinear", align_corners=False)[0]


def area_down(image: torch.Tensor, factor: int) -> torch.Tensor:
    """(C, H, W) → (C, ⌈H/k⌉, ⌈W/k⌉), each pixel the mean of its k×k block (F.interpolate's area
    mode). Where k divides both sides the blocks are a fixed-stride average pool: the same bins,
    one cheap kernel; otherwise adaptive pooling's uneven bins, as area mode does."""
    height, width = image.shape[1:]
    if height % factor == 0 and width % factor == 0:
        return F.avg_pool2d(image, factor)
    return F.interpolate(image[None], size=(-(-height // factor), -(-width // factor)), mode="area")[0]


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
        self.blur = SeparableBlur(_taps(self.sigma), device)

    def down(self, image: torch.Tensor) -> torch.Tensor:
        """(C, H, W) → the blur on its level, (C, ⌈H/k⌉, ⌈W/k⌉) (a strided view, `gemm_blur`'s)."""
        return self.blur(area_down(image, self.factor) if self.factor > 1 else image)

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        small = self.down(image)
        return small if self.factor == 1 else _upscale(small, image.shape[1:])


def sampling_grid(flows: torch.Tensor, size: tuple[int, int]) -> tuple[torch.Tensor, ...]:
    """(2, h, w, 2) pair flows at flow size → (forward, backward) at `size`, each (2, H, W) in px
    (bilinear, vectors scaled with the image: flow.resize_flow's twin), where the backward flow
    points, x + backward(x) (2, H, W) in px, and that as grid_sample's grid (1, H, W, 2) in
    [−1, 1] (a strided view: grid_sample reads any strides). A (1, h, w, 2) stack is the
    backward flow alone: forward is None."""
    count = flows.shape[0]
    small = flows.permute(0, 3, 1, 2).reshape(1, 2 * count, *flows.shape[1:3])
    if tuple(flows.shape[1:3]) != tuple(size):
        small = F.interpolate(small, size=size, mode="bilinear", align_corners=False)
    scale, pixels, to_grid, minus_one = _grid_constants(tuple(flows.shape[1:3]), tuple(size), flows.device)
    flow = small[0] * scale[:2 * count]
    target = flow[-2:] + pixels
    grid = torch.addcmul(minus_one, target, to_grid).permute(1, 2, 0)[None]
    return (flow[:2] if count == 2 else None), flow[-2:], target, grid


@functools.lru_cache(maxsize=8)
def _grid_constants(flow_size: tuple[int, int], size: tuple[int, int], device: torch.device):
    """Per shape, made once (a tensor built on the GPU per frame would be a host-to-device copy
    per frame): the flows' scale to `size` (4, 1, 1), each pixel's (x, y) (2, H, W), px →
    [−1, 1] (2, 1, 1) and its offset −1 (2, 1, 1)."""
    (h, w), (height, width) = flow_size, size
    scale = torch.tensor([width / w, height / h] * 2).view(4, 1, 1)
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32),
                            indexing="ij")
    to_grid = torch.tensor([2.0 / max(width - 1, 1), 2.0 / max(height - 1, 1)]).view(2, 1, 1)
    return (scale.to(device), torch.stack([xs, ys]).to(device), to_grid.to(device),
            torch.full((2, 1, 1), -1.0, device=device))


@functools.lru_cache(maxsize=8)
def _last_pixel(size: tuple[int, int], device: torch.device) -> torch.Tensor:
    """(x, y) of the frame's last column and row, (2, 1, 1): the inside-the-frame test's bound."""
    return torch.tensor([size[1] - 1.0, size[0] - 1.0], device=device).view(2, 1, 1)


def _sample(image: torch.Tensor, grid: torch.Tensor, mode: str = "bilinear") -> torch.Tensor:
    return F.grid_sample(image[None], grid, mode=mode, padding_mode="border", align_corners=True)[0]


def unreliable(forward: torch.Tensor | None, backward: torch.Tensor, target: torch.Tensor,
               grid: torch.Tensor) -> torch.Tensor:
    """bool (H, W): not flow.reliable (occluded, on a motion boundary or matched outside the
    frame), on `sampling_grid`'s outputs (forward None: no forward–backward test). The five
    squared norms the tests need — of the round trip c + b, the carried forward flow c, the
    backward flow b and its x and y differences — come from one square and one channel sum over
    their (10, H, W) stack. Inside is tested in px: in [−1, 1] a match a hair outside the frame
    could round onto its edge."""
    edge = F.pad(backward[None], (0, 1, 0, 1), mode="replicate")[0]   # a difference of 0 past the edge
    height, width = backward.shape[1:]
    differences = [edge[:, :height, 1:] - backward, edge[:, 1:, :width] - backward]
    outside = ((target < 0.0) | (target > _last_pixel((height, width), target.device))).any(0)
    if forward is None:
        norm, du, dv = torch.cat([backward, *differences]).square_().view(3, 2, height, width).sum(1)
        return ((du + dv) > norm.mul_(0.01).add_(0.002)) | outside
    carried = _sample(forward, grid)
    vectors = torch.cat([carried + backward, carried, backward, *differences])
    trip, carried_norm, norm, du, dv = vectors.square_().view(5, 2, height, width).sum(1)
    mismatch = trip > (carried_norm + norm).mul_(0.01).add_(0.5)
    boundary = (du + dv) > norm.mul_(0.01).add_(0.002)
    return mismatch | boundary | outside


@dataclass
class TorchTemporalBlender(TemporalSettings):
    device: str | torch.device = "cpu"
    _feather: SeparableBlur = field(init=False, repr=False)

    def __post_init__(self):
        super().__post_init__()
        self.device = torch.device(self.device)
        with cuda_work():   # the taps' uploads
            self._feather = SeparableBlur(_taps(FEATHER_SIGMA, 2 * self.feather + 1), self.device)
            self._detail = PyramidBlur(self.detail_px(), self.device) if self.detail_sigma else None
            if self.restores():
                (_, band), (_, window) = self.restore_blurs()
                self._band, self._window = PyramidBlur(band, self.device), PyramidBlur(window, self.device)
            self.reset()

    def reset(self) -> None:
        """Forget the history (a new clip, a new style, an engine rerun)."""
        self._content: torch.Tensor | None = None
        self._output: torch.Tensor | None = None
        with cuda_work():
            self._restarts = torch.zeros((), dtype=torch.int64, device=self.device)
            self._trusted = torch.zeros((), device=self.device)

    @property
    def restarts(self) -> int:
        with cuda_work():   # a read-back
            return int(self._restarts)

    @property
    def trusted_fraction(self) -> float:
        with cuda_work():
            return float(self._trusted)

    def trust(self, content: torch.Tensor, previous: torch.Tensor,
              flows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(backward flow's grid (1, H, W, 2), float32 trust mask (H, W)) at the content's size."""
        forward, backward, target, grid = sampling_grid(flows, tuple(content.shape[1:]))
        difference = (content - _sample(previous, grid).round()).abs_().amax(0)
        untrusted = (unreliable(forward, backward, target, grid) | (difference > self.photometric_tolerance)).float()
        if not self.feather:
            return grid, 1.0 - untrusted
        # Erode the trusted (dilate the untrusted: a max-pool, −∞ outside) then blur: the blend
        # fades out before an untrusted region instead of across it.
        size = 2 * self.feather + 1
        untrusted = F.max_pool2d(untrusted[None], size, stride=1, padding=self.feather)
        return grid, 1.0 - self._feather(untrusted)[0]

    def __call__(self, content: torch.Tensor, stylized: torch.Tensor,
                 flows: torch.Tensor | np.ndarray | None) -> torch.Tensor:
        """content: (3, H, W) input frame; stylized: (3, h, w) its stylization, both float 0–255 on
        `device` (stylized is rounded and clamped as its uint8 would be); flows: `pair_flows` from
        the previous content frame to this one, both flows or the backward one alone (no
        forward–backward test), None restarts → the blended frame (3, h, w),
        float32 of whole numbers in 0–255."""
        for name, t in (("content", content), ("stylized", stylized)):
            if t.dim() != 3 or t.shape[0] != 3:
                raise ValueError(f"{name} must be (3, H, W), got {tuple(t.shape)}")
        with cuda_work():
            return self._blend(content, stylized, flows)

    def _blend(self, content: torch.Tensor, stylized: torch.Tensor, flows) -> torch.Tensor:
        content = content if content.dtype == torch.float32 else content.float()
        # [current, blend] in one buffer: the restore blurs both without a concatenated copy.
        both = torch.empty((6, *stylized.shape[1:]), device=stylized.device)
        current, blended = both[:3], both[3:]
        torch.clamp(stylized.round(), 0.0, 255.0, out=current)
        if (self.strength == 0.0 or flows is None or self._content is None
                or self._content.shape != content.shape or self._output.shape != current.shape):
            return self._keep(content, current)
        if (not isinstance(flows, torch.Tensor) or flows.dtype != torch.float32
                or flows.device.type != self.device.type):
            flows = torch.as_tensor(flows).to(self.device, torch.float32, non_blocking=True)
        grid, mask = self.trust(content, self._content, flows)
        self._trusted = trusted = mask.mean()
        # A scene cut (too few trusted pixels) blends nothing: a zero mask leaves the current
        # frame, the restore's gain 1 and its output the current frame's whole levels.
        cut = trusted < 1.0 - self.scene_cut
        self._restarts += cut
        mask = mask.masked_fill(cut, 0.0)
        if current.shape[1:] != content.shape[1:]:
            grid = sampling_grid(flows, tuple(current.shape[1:]))[3]
            mask = _upscale(mask[None], current.shape[1:])[0]
        change = _sample(self._output, grid, "bicubic") - current
        if self._detail is not None:
            change = self._detail(change)
        torch.addcmul(current, mask, change, value=self.weight(flows), out=blended)
        out = self._restore(both) if self.restores() else blended
        return self._keep(content, out.clamp_(0.0, 255.0))

    def _restore(self, both: torch.Tensor) -> torch.Tensor:
        """TemporalBlender._restore's twin on [current, blend] (6, H, W): the fine band scaled
        back to the current frame's energy. Both frames go through each blur together; the gain
        is formed on the energy window's pyramid level and upscaled once."""
        small = self._band.down(both)
        base = _upscale(small, both.shape[1:]) if self._band.factor > 1 else small
        fine = both - base
        energy = fine.square().view(2, 3, *fine.shape[1:]).sum(1)         # (2, H, W)
        smooth = self._window.down(energy).add_(1.0)
        gain = smooth[0:1].div_(smooth[1:2]).sqrt_().clamp_(1.0, MAX_GAIN)   # restore_gain on the level
        if self._window.factor > 1:
            gain = _upscale(gain, fine.shape[1:])
        return torch.addcmul(base[3:], gain, fine[3:])

    def _keep(self, content: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
        self._content = content
        self._output = output
        return output.round()
