"""Runtime temporal consistency: blend the previous output, warped along the flow, into each frame.

Per-frame style networks flicker: a small change of the input moves the painted texture. For
frame t, with flows computed on the INPUT frames (DIS, `flow.py`):

    O_t = S_t + α · M_t · G_σ * (warp(O_{t−1}) − S_t)

S_t is the stylized frame, α the strength, G_σ a Gaussian blur, M_t the trusted pixels: the
forward–backward consistency and motion-boundary tests of Ruder et al. 2016, the match inside the previous frame,
and the inputs agreeing after the warp (lighting changes, flow errors), feathered so that no seam
shows. Along a trajectory the coarse content is an exponential moving average; occluded and newly visible pixels
take S_t alone. G_σ keeps the current frame's finest detail: averaging brush strokes that are
not perfectly aligned washes them out, which the Gram-matrix style loss punishes at once (a
plain blend at α = 0.7 raised it by two thirds on 160-px clips; see docs/temporal.md), while the
most of the measured flicker is coarser. The band between σ and the strokes' size is still
averaged, so afterwards it is scaled back to the current frame's local energy (`_restore`).
A scene cut (most pixels untrusted) restarts the
history. The previous output is kept in float32 so that rounding does not accumulate, and warped
bicubically so that repeated warps blur less. It is a post-process like Lai et al. 2018's, without their trained
network: it
cannot remove flicker the flow cannot see (e.g. a static camera over changing texture).

Two steps: the flows of a frame pair (DIS at reduced size, `flow_ahead.pair_flows`, which
depends on the inputs only and so may run ahead, in parallel; with `flow_check` off the backward
flow alone, the photometric test standing in for the forward–backward one and α scaled by
`unchecked_trust`) and the blend, which is sequential.
This module is the NumPy/OpenCV blend, for CPU runs: `TemporalBlender(content, stylized)` fits
the video pipeline's `frame_filter` argument and computes the flows itself, or takes them
(`blend`). `temporal_torch.TorchTemporalBlender` is the same blend in PyTorch, run on the
engine's GPU output, with its wide blurs on a pyramid level; this one is the exact reference and
a test holds the two within a stated tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from .flow import BLEND_PRESET, PRESETS, FlowEstimator, reliable, resize_flow, warp
from .options import TEMPORAL_DETAIL_SIGMA, TEMPORAL_FLOW_CHECK, TEMPORAL_STRENGTH, TEMPORAL_UNCHECKED_TRUST

# Without the forward flow the trust mask also passes pixels whose flow the round trip refuses:
# its bound (√0.5 px at 1080p) is a quarter of a pixel at the 640-px flow size, and on smooth surfaces
# a flow that far off still matches the inputs within any photometric tolerance. The blend then
# weighs the carried frame by a share of α (`unchecked_trust`, TEMPORAL_UNCHECKED_TRUST: 0.846 at
# the default 0.9), so fewer frames' strokes are averaged where the flow may be off; the
# scene-cut test is unchanged (docs/temporal.md).
FEATHER_SIGMA = 0.0     # cv2's rule for the feather's kernel: σ from its size (binomial ≤ 7 taps)
MAX_GAIN = 2.0          # the energy restore amplifies the fine band at most this much


@dataclass
class TemporalSettings:
    strength: float = TEMPORAL_STRENGTH    # α: weight of the warped previous output where trusted
    preset: str = BLEND_PRESET            # DIS preset of the blend's flows: ultrafast, fast, medium
    flow_max_side: int | None = 640       # flow on a copy downscaled to this (None: full size)
    flow_check: bool = TEMPORAL_FLOW_CHECK    # the forward flow too, for the forward–backward test;
    #                                       off: the backward flow alone (half the flow's cost)
    photometric_tolerance: float = 30.0   # max input difference (0–255) after the warp to trust a pixel
    unchecked_trust: float = TEMPORAL_UNCHECKED_TRUST   # × α without the forward–backward test (backward
    #                                       flow alone): its trusted pixels' flows are less sure
    scene_cut: float = 0.6                # restart when more than this share of pixels is untrusted
    feather: int = 2                      # px: the trust mask is blurred by this radius
    detail_sigma: float = TEMPORAL_DETAIL_SIGMA   # px at the network's scale: finer detail stays
    #                                       the current frame's; 0 = off
    stroke_factor: float = 1.0            # the stylizer's downscale (engine.stroke.stroke_factor): σ's px multiplier
    restore_scale: float = 8.0            # × σ: the band finer than this gets back the current frame's
    #                                       local energy (`_restore`); 0 = off
    restore_window: float = 0.5           # × σ: the Gaussian window over which that energy is measured

    def __post_init__(self):
        if not 0.0 <= self.strength < 1.0:
            raise ValueError(f"temporal strength must be in [0, 1), got {self.strength}")
        if self.preset not in PRESETS:
            raise ValueError(f"flow preset must be one of {tuple(PRESETS)}, got {self.preset!r}")
        if not 0.0 < self.scene_cut <= 1.0:
            raise ValueError(f"scene_cut must be in (0, 1], got {self.scene_cut}")
        if self.feather < 0 or self.photometric_tolerance <= 0 or self.detail_sigma < 0 or self.stroke_factor < 1:
            raise ValueError("feather and detail_sigma must be ≥ 0, photometric_tolerance > 0, stroke_factor ≥ 1")
        if not 0.0 < self.unchecked_trust <= 1.0:
            raise ValueError(f"unchecked_trust must be in (0, 1], got {self.unchecked_trust}")
        if self.restore_scale < 0 or self.restore_window <= 0:
            raise ValueError("restore_scale must be ≥ 0 and restore_window > 0")

    def weight(self, flows) -> float:
        """The blend's α for a pair's flows: `strength`, × `unchecked_trust` when they hold the
        backward flow alone (one flow: no forward–backward test behind the trust mask)."""
        return self.strength * (self.unchecked_trust if len(flows) == 1 else 1.0)

    def detail_px(self) -> float:
        """The detail blur's σ in output pixels. The network paints at its internal size (`stroke`
        scale: auto draws 512-px strokes at any size), so its strokes grow with that factor; a σ
        fixed in output pixels would let the blend average ever more of them as frames grow."""
        return self.detail_sigma * self.stroke_factor

    def detail_size(self) -> int:
        """The detail blur's kernel size: cv2.GaussianBlur's rule for float images (±4σ)."""
        return kernel_size(self.detail_px())

    def restores(self) -> bool:
        return bool(self.restore_scale and self.detail_sigma)

    def restore_blurs(self) -> tuple[tuple[int, float], tuple[int, float]]:
        """(size, σ) of the restore's two blurs in output px: the band's split, the energy window."""
        band, window = self.restore_scale * self.detail_px(), self.restore_window * self.detail_px()
        return (kernel_size(band), band), (kernel_size(window), window)


def kernel_size(sigma: float) -> int:
    """cv2.GaussianBlur's kernel size for a float image and σ (±4σ, odd)."""
    return round(sigma * 8 + 1) | 1


def restore_gain(current_energy, blended_energy):
    """The fine band's gain: the current frame's local energy over the blend's, kept in
    [1, MAX_GAIN] (the blend only removes energy; +1 level² keeps flat areas at 1). Works on
    NumPy arrays and tensors alike, so both blenders share it."""
    ratio = ((current_energy + 1.0) / (blended_energy + 1.0)) ** 0.5
    return ratio.clip(1.0, MAX_GAIN)


@dataclass
class TemporalBlender(TemporalSettings):
    _estimator: FlowEstimator = field(init=False, repr=False)

    def __post_init__(self):
        super().__post_init__()
        self._estimator = FlowEstimator(self.preset, self.flow_max_side)
        self.reset()

    def reset(self) -> None:
        """Forget the history (a new clip, a new style)."""
        self._content: np.ndarray | None = None
        self._output: np.ndarray | None = None
        self.restarts = 0
        self.trusted_fraction = 0.0

    def trust(self, content: np.ndarray, previous: np.ndarray,
              flows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(backward flow t → t−1, float32 trust mask in [0, 1]) at the content's size, from the
        pair's flows at flow size (`pair_flows`: [forward t−1 → t, backward t → t−1], or
        [backward] alone, which skips the forward–backward test)."""
        size = content.shape[:2]
        backward = resize_flow(flows[-1].copy(), size)
        forward = resize_flow(flows[0].copy(), size) if len(flows) == 2 else None
        trusted = reliable(forward, backward)
        difference = np.abs(content.astype(np.int16) - warp(previous, backward).astype(np.int16)).max(-1)
        trusted &= difference <= self.photometric_tolerance
        mask = trusted.astype(np.float32)
        if self.feather:
            # Erode-then-blur: the blend fades out before an untrusted region instead of across it.
            size = 2 * self.feather + 1
            mask = cv2.erode(mask, np.ones((size, size), np.uint8))
            mask = cv2.GaussianBlur(mask, (size, size), FEATHER_SIGMA)
        return backward, mask

    def __call__(self, content: np.ndarray, stylized: np.ndarray) -> np.ndarray:
        """content: the input frame, stylized: its per-frame stylization, both uint8 (H, W, 3) RGB
        (stylized may have another size) → the blended frame, uint8 like `stylized`."""
        flows = None
        if self._content is not None and self._content.shape == content.shape and self.strength:
            backward = self._estimator.small(content, self._content)
            flows = (np.stack([self._estimator.small(self._content, content), backward]) if self.flow_check
                     else backward[None])
        return self.blend(content, stylized, flows)

    def blend(self, content: np.ndarray, stylized: np.ndarray, flows: np.ndarray | None) -> np.ndarray:
        """As calling it, with the flows from the previous content frame to this one given:
        float32 (2, h, w, 2) at flow size, [forward, backward], or (1, h, w, 2), [backward];
        None restarts the history."""
        for name, array in (("content", content), ("stylized", stylized)):
            if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
                raise ValueError(f"{name} must be uint8 (H, W, 3), got {array.dtype} {array.shape}")
        current = stylized.astype(np.float32)
        if (self.strength == 0.0 or flows is None or self._content is None
                or self._content.shape != content.shape or self._output.shape != current.shape):
            return self._keep(content, current)
        backward, mask = self.trust(content, self._content, flows)
        self.trusted_fraction = float(mask.mean())
        if 1.0 - self.trusted_fraction > self.scene_cut:
            self.restarts += 1
            return self._keep(content, current)
        if current.shape[:2] != content.shape[:2]:
            backward = resize_flow(backward, current.shape[:2])
            mask = cv2.resize(mask, current.shape[1::-1], interpolation=cv2.INTER_LINEAR)
        change = warp(self._output, backward, cv2.INTER_CUBIC) - current
        if self.detail_sigma:
            size = self.detail_size()
            change = cv2.GaussianBlur(change, (size, size), self.detail_px())
        blended = current + (self.weight(flows) * mask)[..., None] * change
        if self.restores():
            blended = self._restore(current, blended)
        return self._keep(content, np.clip(blended, 0.0, 255.0))

    def _restore(self, current: np.ndarray, blended: np.ndarray) -> np.ndarray:
        """The blend with its band finer than restore_scale·σ scaled back up to the current
        frame's local energy: averaging strokes that do not line up lowers their contrast, which
        the style's Gram statistics see, while the coarse part that carries the flicker stays."""
        (band_size, band_sigma), (window_size, window_sigma) = self.restore_blurs()

        def split(image):
            base = cv2.GaussianBlur(image, (band_size, band_size), band_sigma)
            fine = image - base
            energy = cv2.GaussianBlur((fine * fine).sum(-1), (window_size, window_size), window_sigma)
            return base, fine, energy
        _, _, current_energy = split(current)
        base, fine, blended_energy = split(blended)
        return base + restore_gain(current_energy, blended_energy)[..., None] * fine

    def _keep(self, content: np.ndarray, output: np.ndarray) -> np.ndarray:
        self._content = content.copy()
        self._output = output
        return np.rint(output).astype(np.uint8)
