"""Flow, warp and occlusion masks against the exact flow of synthetic camera clips (tiny frames)."""
from __future__ import annotations

import numpy as np
import pytest

from styleforge.media.flow import FlowEstimator, inside, motion_boundary, occlusion, reliable, resize_flow, warp
from styleforge.media.synthetic import MOTIONS, camera_clip, motion_clip


def texture(height: int = 160, width: int = 200, seed: int = 0) -> np.ndarray:
    """A smooth random photo: blurred noise has structure at every scale DIS looks at."""
    import cv2
    rng = np.random.default_rng(seed)
    noise = rng.uniform(0, 255, (height, width, 3)).astype(np.float32)
    smooth = cv2.GaussianBlur(noise, (0, 0), 2.0) * 3 - 255
    return np.clip(smooth, 0, 255).astype(np.uint8)


def interior(mask: np.ndarray, margin: int = 6) -> np.ndarray:
    out = mask.copy()
    out[:margin], out[-margin:], out[:, :margin], out[:, -margin:] = False, False, False, False
    return out


def test_integer_pan_exact_warp_reproduces_the_frame():
    clip = camera_clip(texture(), (48, 64), 3, shift=(3.0, -2.0))
    forward, backward = clip.flows[0]
    # The camera moves right, so the scene moves left: frame 1's pixel x was at x + 3 in frame 0.
    assert np.allclose(backward, [3.0, -2.0]) and np.allclose(forward, [-3.0, 2.0])
    warped = warp(clip.frames[0], backward)
    keep = inside(backward)
    assert keep.mean() < 1.0                                   # the entering strip is marked
    assert np.array_equal(warped[keep], clip.frames[1][keep])


@pytest.mark.parametrize("motion", sorted(MOTIONS))
def test_dis_flow_matches_the_exact_flow(motion):
    clip = motion_clip(texture(), motion, (64, 80), 3)
    estimator = FlowEstimator("medium")
    _, exact = clip.flows[1]
    estimated = estimator(clip.frames[2], clip.frames[1])
    error = np.sqrt(((estimated - exact) ** 2).sum(-1))
    assert error[interior(inside(exact))].mean() < 0.35, motion


def test_exact_flows_are_consistent_and_reliable_on_a_flat_scene():
    clip = motion_clip(texture(), "pan-zoom", (48, 64), 2)
    forward, backward = clip.flows[0]
    assert not occlusion(forward, backward).any()          # no parallax, no occlusion
    assert np.array_equal(reliable(forward, backward), inside(backward))


def test_occlusion_marks_a_moving_square_edge():
    # The background stays, a square moves 4 px right: its trailing edge is uncovered.
    backward = np.zeros((40, 40, 2), np.float32)
    forward = np.zeros_like(backward)
    forward[10:20, 10:20, 0] = 4.0
    backward[10:20, 14:24, 0] = -4.0
    occluded = occlusion(forward, backward)
    assert occluded[12:18, 10:13].all()          # uncovered background: the forward flow disagrees
    assert not occluded[30:, 30:].any()          # still background
    assert motion_boundary(backward)[15, 13]


def test_resize_flow_scales_vectors():
    flow = np.full((10, 20, 2), (2.0, 1.0), np.float32)
    assert np.allclose(resize_flow(flow, (20, 40)), (4.0, 2.0))


def test_flow_max_side_keeps_the_scale():
    clip = camera_clip(texture(200, 260), (96, 128), 2, shift=(2.0, 1.0))
    estimated = FlowEstimator("medium", max_side=64)(clip.frames[1], clip.frames[0])
    assert estimated.shape == (96, 128, 2)
    assert np.abs(np.median(estimated.reshape(-1, 2), 0) - (2.0, 1.0)).max() < 0.3


def test_camera_leaving_the_photo_is_an_error():
    with pytest.raises(ValueError, match="leaves"):
        camera_clip(texture(50, 50), (40, 40), 10, shift=(5.0, 0.0))
