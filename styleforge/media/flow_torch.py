"""The temporal blend's pair flows on the device: a coarse-to-fine dense Lucas–Kanade in PyTorch.

`pair_flows` is `flow_ahead.pair_flows`'s twin for tensors: from two luma frames at flow size it
returns [forward previous → current, backward current → previous] as (2, h, w, 2) float32 in the
same convention as `flow.py` (A(x) ≈ B(x + f(x))), so `TorchTemporalBlender` takes either. Both
flows are one batch of two, and nothing is read back: on CUDA the engine thread only issues work
and no CPU core computes a flow.

The method is the inverse-search idea of DIS (Kroeger et al. 2016) made dense: on each level of
an area pyramid (coarse to fine) the flow from the level above is refined by a few Gauss–Newton
steps of Lucas–Kanade (Lucas & Kanade 1981; Bouguet's pyramidal form) whose window is a
Gaussian around every pixel. As in DIS's inverse search the gradients are the first frame's, so
each level's 2×2 structure tensor is formed once and every step is a warp, a product, one blur
and a closed-form 2×2 solve. A Tikhonov term keeps flat and edge-only windows (the aperture
problem) at the coarser level's estimate instead of dividing by nothing. Like DIS's fast presets
it may stop a level above full size (`finest`) and upscale. No variational refinement, no
occlusion handling: the blender's forward–backward and photometric tests reject what it gets
wrong, as they do for DIS.

Not here: OpenCV's DIS (`flow.py`, the CPU path and the reference its tests compare with), the
masks and the blend (`temporal_torch.py`). Tested in tests/media/test_flow_torch.py against
synthetic motion with known flow and against DIS on a bench clip.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import cv2
import torch
import torch.nn.functional as F

GRAY = (0.299, 0.587, 0.114)   # cv2.COLOR_RGB2GRAY's weights: the luma DIS sees on the CPU path


@dataclass(frozen=True)
class LucasKanadeSettings:
    coarsest: int = 24          # px: the pyramid stops before a level's shorter side gets below this
    finest: int = 0             # the finest level solved (0: flow size; 1: half, upscaled, as DIS fast)
    # Chosen on tiny synthetic and bench frames (CPU; tests/media/test_flow_torch.py): a wide window
    # and a strong damping keep the flow smooth enough for the blend's motion-boundary test (which
    # flags flow gradients of ~0.15 px/px); more steps than 5 fit noise, fewer leave the damped
    # steps short of the motion.
    iterations: int = 5         # Gauss–Newton steps per level
    window: float = 4.0         # σ in px of the Gaussian window around each pixel, on every level
    presmooth: float = 1.0      # σ in px of the blur applied to each level before its gradients
    damping: float = 50.0       # Tikhonov term in (grey level / px)²: larger keeps more of the coarse flow

    def __post_init__(self):
        if self.coarsest < 4 or self.finest < 0 or self.iterations < 1:
            raise ValueError("coarsest must be ≥ 4, finest ≥ 0 and iterations ≥ 1")
        if self.window <= 0 or self.presmooth < 0 or self.damping <= 0:
            raise ValueError("window and damping must be > 0, presmooth ≥ 0")


DEFAULT = LucasKanadeSettings()


@functools.lru_cache(maxsize=16)
def _taps(sigma: float, device: torch.device) -> torch.Tensor:
    size = max(3, round(sigma * 6 + 1) | 1)   # ±3σ
    return torch.from_numpy(cv2.getGaussianKernel(size, sigma, ktype=cv2.CV_32F).ravel()).to(device)


def _blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """(N, C, H, W) blurred by a separable Gaussian, replicated borders (no dark rim to match)."""
    if sigma <= 0:
        return x
    taps = _taps(sigma, x.device)
    channels, radius = x.shape[1], taps.numel() // 2
    x = F.pad(x, (radius, radius, radius, radius), mode="replicate")
    x = F.conv2d(x, taps.view(1, 1, 1, -1).expand(channels, 1, 1, -1), groups=channels)
    return F.conv2d(x, taps.view(1, 1, -1, 1).expand(channels, 1, -1, 1), groups=channels)


def _gradients(x: torch.Tensor) -> torch.Tensor:
    """(N, 1, H, W) → (N, 2, H, W) central differences (x, y), one-sided at the border."""
    p = F.pad(x, (1, 1, 1, 1), mode="replicate")
    return torch.cat([(p[..., 1:-1, 2:] - p[..., 1:-1, :-2]) * 0.5, (p[..., 2:, 1:-1] - p[..., :-2, 1:-1]) * 0.5], 1)


@functools.lru_cache(maxsize=16)
def _pixels(height: int, width: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Per level, made once: each pixel's (x, y) (1, 2, H, W) and px → grid_sample's [−1, 1] (1, 2, 1, 1)."""
    # Made on the device (arange, full): a CPU tensor copied over would be a synchronizing copy.
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float32, device=device),
                            torch.arange(width, dtype=torch.float32, device=device), indexing="ij")
    scale = torch.cat([torch.full((1, 1, 1, 1), 2.0 / max(width - 1, 1), device=device),
                       torch.full((1, 1, 1, 1), 2.0 / max(height - 1, 1), device=device)], 1)
    return torch.stack([xs, ys])[None], scale


def _warp(image: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
    """(N, 1, H, W) sampled at x + flow(x), flow (N, 2, H, W) in px; border replicated."""
    pixels, scale = _pixels(*image.shape[-2:], image.device)
    grid = ((pixels + flow) * scale - 1.0).permute(0, 2, 3, 1)
    return F.grid_sample(image, grid, mode="bilinear", padding_mode="border", align_corners=True)


def _resize_flow(flow: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """(N, 2, h, w) → (N, 2, H, W), bilinear, vectors scaled with the image (flow.resize_flow's twin)."""
    height, width = flow.shape[-2:]
    out = F.interpolate(flow, size=size, mode="bilinear", align_corners=False)
    # Scalars per channel, not a small tensor: building one on the GPU is a synchronizing copy.
    return torch.cat([out[:, :1] * (size[1] / width), out[:, 1:] * (size[0] / height)], 1)


def pyramid(images: torch.Tensor, coarsest: int) -> list[torch.Tensor]:
    """(N, 1, H, W) → levels, finest first, each the area average of the one before (sides halved,
    rounded up) while the next level's shorter side stays ≥ `coarsest`."""
    levels = [images]
    while min(-(-s // 2) for s in levels[-1].shape[-2:]) >= coarsest:
        h, w = levels[-1].shape[-2:]
        levels.append(F.avg_pool2d(levels[-1], 2) if h % 2 == 0 and w % 2 == 0
                      else F.interpolate(levels[-1], size=(-(-h // 2), -(-w // 2)), mode="area"))
    return levels


def lucas_kanade(first: torch.Tensor, second: torch.Tensor, settings: LucasKanadeSettings = DEFAULT) -> torch.Tensor:
    """Flow (N, 2, H, W) in px from `first` to `second`, both (N, 1, H, W) float grey levels:
    first(x) ≈ second(x + flow(x))."""
    firsts, seconds = pyramid(first, settings.coarsest), pyramid(second, settings.coarsest)
    finest = min(settings.finest, len(firsts) - 1)
    flow = torch.zeros((first.shape[0], 2, *firsts[-1].shape[-2:]), device=first.device)
    for level in range(len(firsts) - 1, finest - 1, -1):
        a = _blur(firsts[level], settings.presmooth)
        b = _blur(seconds[level], settings.presmooth)
        if flow.shape[-2:] != a.shape[-2:]:
            flow = _resize_flow(flow, tuple(a.shape[-2:]))
        grad = _gradients(a)                                             # (N, 2, H, W): gx, gy
        gx, gy = grad[:, :1], grad[:, 1:]
        # The structure tensor of the first frame, formed once a level (the inverse search's gain).
        sxx, sxy, syy = _blur(torch.cat([gx * gx, gx * gy, gy * gy], 1), settings.window).unbind(1)
        sxx, syy = sxx + settings.damping, syy + settings.damping
        inverse_det = (sxx * syy - sxy * sxy).reciprocal_()
        for _ in range(settings.iterations):
            difference = _warp(b, flow) - a                              # (N, 1, H, W)
            bx, by = _blur(grad * difference, settings.window).unbind(1)
            # (S + λI) Δ = Σ ∇a · difference; the flow moves against the residual.
            du = (syy * bx - sxy * by) * inverse_det
            dv = (sxx * by - sxy * bx) * inverse_det
            flow = flow - torch.stack([du, dv], 1)
    if finest:
        flow = _resize_flow(flow, tuple(first.shape[-2:]))
    return flow


def luma(rgb: torch.Tensor) -> torch.Tensor:
    """(3, H, W) RGB (any float range) → (H, W) grey, cv2.COLOR_RGB2GRAY's weights."""
    return rgb[0] * GRAY[0] + rgb[1] * GRAY[1] + rgb[2] * GRAY[2]   # no host-to-device copy


def flow_size(height: int, width: int, max_side: int | None) -> tuple[int, int]:
    """(h, w) of `flow.shrink`'s copy of an (height, width) frame."""
    if not max_side or max(height, width) <= max_side:
        return height, width
    scale = max_side / max(height, width)
    return max(1, round(height * scale)), max(1, round(width * scale))


def shrink(gray: torch.Tensor, max_side: int | None) -> torch.Tensor:
    """(H, W) → float32 (h, w) at `flow_size`, area-averaged (flow.shrink's twin, unrounded)."""
    size = flow_size(*gray.shape, max_side)
    gray = gray.float()
    if size == tuple(gray.shape):
        return gray
    return F.interpolate(gray[None, None], size=size, mode="area")[0, 0]


def pair_flows(previous: torch.Tensor, current: torch.Tensor,
               settings: LucasKanadeSettings = DEFAULT, check: bool = True) -> torch.Tensor:
    """float32 (2, h, w, 2): [forward previous → current, backward current → previous] from two
    (h, w) grey frames at flow size, as one batch of two; without `check` (1, h, w, 2):
    [backward] alone (`flow_ahead.pair_flows`' layouts)."""
    if previous.shape != current.shape or previous.dim() != 2:
        raise ValueError(f"pair_flows needs two (h, w) frames of one size, got {tuple(previous.shape)} "
                         f"and {tuple(current.shape)}")
    if not check:
        return lucas_kanade(current[None, None].float(), previous[None, None].float(),
                            settings).permute(0, 2, 3, 1).contiguous()
    first = torch.stack([previous, current])[:, None].float()
    second = torch.stack([current, previous])[:, None].float()
    return lucas_kanade(first, second, settings).permute(0, 2, 3, 1).contiguous()


class DeviceFlows:
    """Pair flows of one stream on the engine's device, frame by frame in stream order: the
    engine stage hands each frame's content in as it stylizes it. Keeps the previous frame's
    luma at flow size; a gap in the indices (a frame that failed to decode), a change of size
    or `reset` gives None, a restart, as `FlowAhead` does. Not thread-safe: one engine thread."""

    def __init__(self, max_side: int | None = 640, settings: LucasKanadeSettings = DEFAULT, check: bool = True):
        if max_side is not None and max_side < 16:
            raise ValueError(f"flow max_side must be ≥ 16, got {max_side}")
        self.max_side, self.settings, self.check = max_side, settings, check
        self.reset()

    def reset(self) -> None:
        self._previous: tuple[int, torch.Tensor] | None = None

    def __call__(self, index: int, content: torch.Tensor) -> torch.Tensor | None:
        """content: (3, H, W) RGB of frame `index` on the device → `pair_flows` from frame
        index − 1, None for the first frame, after a gap or a change of size."""
        small = shrink(luma(content.float()), self.max_side)
        previous, self._previous = self._previous, (index, small)
        if previous is None or previous[0] != index - 1 or previous[1].shape != small.shape:
            return None
        return pair_flows(previous[1], small, self.settings, self.check)

