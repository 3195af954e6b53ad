"""The warping error (Lai et al. 2018) on synthetic camera clips with exact and DIS flows."""
from __future__ import annotations

import numpy as np
import pytest
from test_flow_warp import texture

from styleforge.media.synthetic import camera_clip, motion_clip
from styleforge.media.warping_error import input_flows, step_masks, warping_error


def test_zero_for_a_perfectly_consistent_video():
    clip = camera_clip(texture(), (40, 56), 4, shift=(2.0, 1.0))
    result = warping_error(clip.frames, clip.flows)
    assert result.mean == 0.0 and len(result.per_step) == 3
    assert 0.0 < result.masked_fraction < 0.2      # only the entering strips


def test_flicker_raises_it_by_the_expected_amount():
    clip = camera_clip(texture(), (40, 56), 4, shift=(1.0, 0.0))
    rng = np.random.default_rng(1)
    offsets = [rng.choice([-20, 20], 3) for _ in clip.frames]   # a global colour flicker per frame
    flickered = [np.clip(f.astype(int) + o, 0, 255).astype(np.uint8) for f, o in zip(clip.frames, offsets)]
    result = warping_error(flickered, clip.flows)
    # Σ over channels of the offset change², where nothing clipped; a bit less where it did.
    expected = np.mean([(((offsets[t] - offsets[t - 1]) / 255.0) ** 2).sum() for t in range(1, 4)])
    assert result.mean == pytest.approx(expected, rel=0.1)


def test_dis_flows_score_like_the_exact_ones():
    clip = motion_clip(texture(), "subpixel-pan", (48, 64), 4)
    rng = np.random.default_rng(2)
    noisy = [np.clip(f + rng.normal(0, 8, f.shape), 0, 255).astype(np.uint8) for f in clip.frames]
    exact = warping_error(noisy, clip.flows).mean
    estimated = warping_error(noisy, input_flows(clip.frames), step_masks(input_flows(clip.frames))).mean
    assert estimated == pytest.approx(exact, rel=0.15)


def test_frame_and_flow_counts_must_match():
    clip = camera_clip(texture(), (24, 24), 3, shift=(1.0, 0.0))
    with pytest.raises(ValueError, match="flow pairs"):
        warping_error(clip.frames, clip.flows[:1])
