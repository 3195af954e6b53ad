"""The warping error of Lai et al. 2018 ("Learning Blind Video Temporal Consistency", ECCV).

For each step t−1 → t: flows between the INPUT frames (forward t−1→t, backward t→t−1), the
previous OUTPUT warped to frame t along the backward flow, and

    E_t = Σ_x M_t(x) · ‖O_t(x) − warp(O_{t−1})(x)‖² / Σ_x M_t(x)      (RGB in [0, 1], Σ over channels)

with M_t the non-occluded pixels (forward–backward check and motion boundaries, `flow.occlusion`).
The clip's error is the mean of E_t. As in their code the warp is bilinear and a step with an
empty mask divides by the pixel count. One addition: pixels whose match lies outside the previous
frame (entering the view) are masked too, since they have no match at all; Lai et al.'s
resampler clamps them to the border instead. Flows come from DIS on the inputs (their FlowNet2's
place) or, for synthetic clips, are the exact ones. Not a perceptual measure of quality.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .flow import FlowEstimator, reliable, warp

FlowPair = tuple[np.ndarray, np.ndarray]   # (forward t−1 → t, backward t → t−1)


@dataclass
class WarpingError:
    mean: float
    per_step: list[float]
    masked_fraction: float      # mean share of pixels left out by the masks


def input_flows(frames: Sequence[np.ndarray], estimator: FlowEstimator | None = None) -> list[FlowPair]:
    """DIS flows of each consecutive pair of input frames (compute once, score many outputs)."""
    estimator = estimator or FlowEstimator("medium")
    return [(estimator(frames[t - 1], frames[t]), estimator(frames[t], frames[t - 1]))
            for t in range(1, len(frames))]


def step_masks(flows: Sequence[FlowPair]) -> list[np.ndarray]:
    """float32 (H, W) non-occlusion masks, one per step."""
    return [reliable(forward, backward).astype(np.float32) for forward, backward in flows]


def warping_error(outputs: Sequence[np.ndarray], flows: Sequence[FlowPair],
                  masks: Sequence[np.ndarray] | None = None) -> WarpingError:
    """Outputs: uint8 (H, W, 3) frames; flows from `input_flows` or exact ones; masks optional
    (from `step_masks`, to reuse them across outputs)."""
    if len(outputs) != len(flows) + 1:
        raise ValueError(f"{len(outputs)} frames need {len(outputs) - 1} flow pairs, got {len(flows)}")
    if len(outputs) < 2:
        raise ValueError("the warping error needs at least 2 frames")
    masks = masks if masks is not None else step_masks(flows)
    errors, masked = [], []
    for t in range(1, len(outputs)):
        previous = outputs[t - 1].astype(np.float32) / 255.0
        current = outputs[t].astype(np.float32) / 255.0
        mask = masks[t - 1]
        if previous.shape[:2] != mask.shape:
            raise ValueError(f"frame {t} is {previous.shape[:2]}, its flow is {mask.shape}")
        squared = ((current - warp(previous, flows[t - 1][1])) ** 2).sum(-1)
        count = float(mask.sum()) or float(mask.size)
        errors.append(float((squared * mask).sum()) / count)
        masked.append(1.0 - float(mask.mean()))
    return WarpingError(float(np.mean(errors)), errors, float(np.mean(masked)))
