"""Playground copy (never imported by the package): the torch blend as of 77a3991, full-size
blurs, kept as the reference for dev/temporal/profile_blend.py and the tolerance check.

The temporal blend of `temporal.py` in PyTorch: on the engine's output, where it already is.

Same formula, masks and settings as `TemporalBlender` (read its docstring); the operations map
one to one: cv2.remap → grid_sample (align_corners=True on pixel coordinates, border padding
for BORDER_REPLICATE; bicubic with A = −0.75 in both), cv2.resize (bilinear) → interpolate
(align_corners=False), cv2.erode → a min-pool with +∞ outside the frame, cv2.GaussianBlur →
two 1-D convolutions with cv2.getGaussianKernel's taps and reflect-101 padding. OpenCV's remap
rounds coordinates to 1/32 px and the uint8 warp to whole levels, so the two agree within a
tolerance, not bit for bit (tests/media/test_temporal_torch.py).

It takes (3, H, W) float tensors in 0–255 on any device and the pair's flows at flow size
(`flow_ahead.pair_flows`, computed ahead on the CPU), and never reads a value back: the scene
cut is a `torch.where` on the device, so on CUDA the engine thread only issues work.
`restarts` and `trusted_fraction` are read (and synchronised) only when asked for.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from styleforge.media.temporal import FEATHER_SIGMA, TemporalSettings, restore_gain


def _coordinates(flow: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(H, W, 2) flow → absolute sampling coordinates x + flow(x), each (H, W)."""
    height, width = flow.shape[:2]
    xs = torch.arange(width, device=flow.device, dtype=flow.dtype)[None, :] + flow[..., 0]
    ys = torch.arange(height, device=flow.device, dtype=flow.dtype)[:, None] + flow[..., 1]
    return xs, ys


def warp(image: torch.Tensor, flow: torch.Tensor, mode: str = "bilinear") -> torch.Tensor:
    """(C, H, W) sampled at x + flow(x), the border replicated (flow.warp's twin)."""
    height, width = flow.shape[:2]
    xs, ys = _coordinates(flow)
    grid = torch.stack([xs * (2.0 / max(width - 1, 1)) - 1.0, ys * (2.0 / max(height - 1, 1)) - 1.0], -1)
    return F.grid_sample(image[None], grid[None], mode=mode, padding_mode="border", align_corners=True)[0]


def resize_flow(flow: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """(h, w, 2) → (H, W, 2), bilinear, vectors scaled with the image (flow.resize_flow's twin)."""
    height, width = size
    if tuple(flow.shape[:2]) == (height, width):
        return flow
    out = F.interpolate(flow.permute(2, 0, 1)[None], size=(height, width), mode="bilinear",
                        align_corners=False)[0]
    # Python scalars, not a tensor of them: building one on the GPU would wait for the stream.
    return torch.stack([out[0] * (width / flow.shape[1]), out[1] * (height / flow.shape[0])], -1)


def _squared_norm(flow: torch.Tensor) -> torch.Tensor:
    return flow[..., 0] ** 2 + flow[..., 1] ** 2


def reliable(forward: torch.Tensor, backward: torch.Tensor) -> torch.Tensor:
    """bool (H, W): flow.reliable's twin (not occluded, not on a motion boundary, match inside)."""
    carried = warp(forward.permute(2, 0, 1), backward).permute(1, 2, 0)
    mismatch = _squared_norm(carried + backward) > 0.01 * (_squared_norm(carried) + _squared_norm(backward)) + 0.5
    du = F.pad((backward[:, :-1] - backward[:, 1:]).permute(2, 0, 1), (0, 1)).permute(1, 2, 0)
    dv = F.pad((backward[:-1] - backward[1:]).permute(2, 0, 1), (0, 0, 0, 1)).permute(1, 2, 0)
    boundary = (du ** 2).sum(-1) + (dv ** 2).sum(-1) > 0.01 * _squared_norm(backward) + 0.002
    height, width = backward.shape[:2]
    xs, ys = _coordinates(backward)
    inside = (xs >= 0) & (xs <= width - 1) & (ys >= 0) & (ys <= height - 1)
    return ~(mismatch | boundary) & inside


def _blur(image: torch.Tensor, taps: torch.Tensor) -> torch.Tensor:
    """(C, H, W) blurred by the separable kernel `taps` (K,), reflect-101 borders (cv2's default)."""
    channels, radius = image.shape[0], taps.numel() // 2
    x = F.pad(image[None], (radius, radius, radius, radius), mode="reflect")
    x = F.conv2d(x, taps.view(1, 1, 1, -1).expand(channels, 1, 1, -1), groups=channels)
    return F.conv2d(x, taps.view(1, 1, -1, 1).expand(channels, 1, -1, 1), groups=channels)[0]


def _taps(size: int, sigma: float, device) -> torch.Tensor:
    return torch.from_numpy(cv2.getGaussianKernel(size, sigma, ktype=cv2.CV_32F).ravel()).to(device)


@dataclass
class TorchTemporalBlender(TemporalSettings):
    device: str | torch.device = "cpu"
    _feather_taps: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self):
        super().__post_init__()
        self.device = torch.device(self.device)
        self._feather_taps = _taps(2 * self.feather + 1, FEATHER_SIGMA, self.device)
        self._detail_taps = _taps(self.detail_size(), self.detail_px(), self.device) if self.detail_sigma else None
        self._restore_taps = ([_taps(size, sigma, self.device) for size, sigma in self.restore_blurs()]
                              if self.restores() else None)
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
        """(backward flow (H, W, 2), float32 trust mask (H, W)) at the content's size."""
        size = tuple(content.shape[1:])
        forward, backward = resize_flow(flows[0], size), resize_flow(flows[1], size)
        trusted = reliable(forward, backward)
        difference = (content - warp(previous, backward).round()).abs().amax(0)
        mask = (trusted & (difference <= self.photometric_tolerance)).float()
        if self.feather:   # erode (a min-pool; +∞ outside, as cv2.erode) then blur
            size = 2 * self.feather + 1
            mask = -F.max_pool2d(-mask[None, None], size, stride=1, padding=self.feather)[0]
            mask = _blur(mask, self._feather_taps)[0]
        return backward, mask

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
        backward, mask = self.trust(content, self._content, flows)
        trusted = mask.mean()
        if current.shape[1:] != content.shape[1:]:
            backward = resize_flow(backward, tuple(current.shape[1:]))
            mask = F.interpolate(mask[None, None], size=current.shape[1:], mode="bilinear",
                                 align_corners=False)[0, 0]
        change = warp(self._output, backward, "bicubic") - current
        if self._detail_taps is not None:
            change = _blur(change, self._detail_taps)
        blended = current + (self.strength * mask) * change
        if self._restore_taps is not None:
            blended = self._restore(current, blended)
        blended = blended.clamp_(0.0, 255.0)
        cut = (1.0 - trusted) > self.scene_cut
        self._restarts += cut
        self._trusted = trusted
        return self._keep(content, torch.where(cut, current, blended))

    def _restore(self, current: torch.Tensor, blended: torch.Tensor) -> torch.Tensor:
        """TemporalBlender._restore's twin: the fine band scaled back to the current frame's energy."""
        band_taps, window_taps = self._restore_taps

        def split(image):
            base = _blur(image, band_taps)
            fine = image - base
            return base, fine, _blur((fine * fine).sum(0, keepdim=True), window_taps)
        _, _, current_energy = split(current)
        base, fine, blended_energy = split(blended)
        return base + restore_gain(current_energy, blended_energy) * fine

    def _keep(self, content: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
        self._content = content
        self._output = output
        return output.round()
