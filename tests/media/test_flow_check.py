"""The blend without the forward flow (`TemporalSettings.flow_check` off, `--no-temporal-flow-check`):
the decode workers compute the backward flow alone, the blenders take that one-flow layout, and
on a pan with an occluder the trust mask still refuses the uncovered background (the photometric
test does what the forward–backward test did) and trusts the rest; the torch blender equals the
OpenCV one on it, and the one-pass flow tests without the forward flow equal their plain form."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_flow_warp import texture
from test_temporal_blender import flickering_stylization
from test_temporal_torch import DEVICES, EXACT, chw, hwc

from styleforge.media.flow import dis, reliable, to_gray
from styleforge.media.flow_ahead import FlowAhead, pair_flows
from styleforge.media.options import VideoOptions
from styleforge.media.temporal import TemporalBlender
from styleforge.media.temporal_torch import TorchTemporalBlender, sampling_grid, unreliable

HEIGHT, WIDTH, SIDE, PAN, MOVE, LEFT = 64, 96, 24, 2, 6, 16


def occluder_clip(count: int = 5):
    """A background panning PAN px a frame (the camera moves right) and a square of another
    texture crossing it MOVE px a frame the other way, integer motions: (frames, exact backward
    flows t → t−1, the uncovered strips). Frame t's square starts at LEFT + MOVE·t; the
    background behind its trailing edge, [LEFT + MOVE·t − MOVE − PAN, LEFT + MOVE·t), was under
    the square in frame t − 1: no match there, though the backward flow is smooth across it."""
    background = texture(HEIGHT, WIDTH + PAN * count, seed=1)
    square = 255 - texture(SIDE, SIDE, seed=2)
    frames, flows, strips = [], [None], [None]
    for t in range(count):
        frame = background[:, PAN * t:PAN * t + WIDTH].copy()
        x = LEFT + MOVE * t
        frame[20:20 + SIDE, x:x + SIDE] = square
        frames.append(frame)
        if t:
            backward = np.zeros((HEIGHT, WIDTH, 2), np.float32)
            backward[..., 0] = PAN
            backward[20:20 + SIDE, x:x + SIDE, 0] = -MOVE
            flows.append(backward)
            strips.append((slice(20, 20 + SIDE), slice(x - MOVE - PAN, x)))
    return frames, flows, strips


def test_the_decode_workers_compute_the_backward_flow_alone():
    frames, _, _ = occluder_clip()
    both, alone = FlowAhead("fast", None), FlowAhead("fast", None, check=False)
    for i, frame in enumerate(frames):
        pair, backward = both(i, to_gray(frame)), alone(i, to_gray(frame))
        if i == 0:
            assert pair is None and backward is None
            continue
        assert pair.shape == (2, HEIGHT, WIDTH, 2) and backward.shape == (1, HEIGHT, WIDTH, 2)
        assert np.array_equal(backward[0], pair[1])   # the same DIS call, the forward one skipped
    engine = dis("fast")
    gray = [to_gray(f) for f in frames[:2]]
    assert np.array_equal(pair_flows(engine, *gray, check=False)[0], pair_flows(engine, *gray)[1])


def test_without_the_forward_flow_the_photometric_test_refuses_the_uncovered_background():
    frames, flows, strips = occluder_clip()
    blender = TemporalBlender(flow_max_side=None)
    for t in (2, 3):
        rows, strip = strips[t]
        # The flow tests alone pass the strip's middle (a smooth backward flow, no forward flow
        # to disagree with it): the inputs' difference after the warp is what refuses it.
        inner = (rows, slice(strip.start + 2, strip.stop - 2))
        assert reliable(None, flows[t])[inner].all()
        _, mask = blender.trust(frames[t], frames[t - 1], flows[t][None])
        assert mask[inner].max() == 0.0
        # Far from the square's path the background is trusted, and so is the square's middle.
        assert mask[:14, 6:-6].min() == 1.0 and mask[50:, 6:-6].min() == 1.0
        x = LEFT + MOVE * t
        assert mask[25:20 + SIDE - 5, x + 5:x + SIDE - 5].min() == 1.0   # 5: erode 2 + feather 2 + the edge


def test_dis_backward_flow_alone_keeps_the_occluders_masks():
    """With DIS flows (the video path's) the one-flow masks refuse the uncovered strip as the
    two-flow masks do, and trust about as much of the frame."""
    frames, _, strips = occluder_clip()
    masks = {}
    for check in (True, False):
        blender = TemporalBlender(flow_max_side=None, flow_check=check)
        ahead = FlowAhead(blender.preset, None, check)
        flows = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
        masks[check] = [blender.trust(frames[t], frames[t - 1], flows[t])[1] for t in (2, 3, 4)]
    for t, one, two in zip((2, 3, 4), masks[False], masks[True]):
        rows, strip = strips[t]
        assert one[rows, strip].mean() < 0.15 and two[rows, strip].mean() < 0.15
        assert one.mean() == pytest.approx(two.mean(), abs=0.05)
        assert one.mean() > 0.6


def test_the_cpu_blender_computes_what_the_workers_would():
    frames, _, _ = occluder_clip()
    stylized = flickering_stylization(frames)
    own, given = TemporalBlender(flow_check=False), TemporalBlender(flow_check=False)
    ahead = FlowAhead(given.preset, given.flow_max_side, check=False)
    for i, (content, styled) in enumerate(zip(frames, stylized)):
        assert np.array_equal(own(content, styled), given.blend(content, styled, ahead(i, to_gray(content))))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_blend_of_the_backward_flow_alone_equals_the_opencv_blend(device):
    frames, _, _ = occluder_clip(7)
    stylized = flickering_stylization(frames)
    cpu = TemporalBlender(flow_check=False, restore_scale=0.0)
    gpu = TorchTemporalBlender(flow_check=False, restore_scale=0.0, device=device)
    ahead = FlowAhead(cpu.preset, cpu.flow_max_side, check=False)
    flows = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
    largest, mean = EXACT
    for content, styled, flow in zip(frames, stylized, flows):
        a = cpu.blend(content, styled, flow)
        b = hwc(gpu(chw(content, device), chw(styled, device), flow))
        gap = np.abs(a.astype(int) - b.astype(int))
        assert gap.max() <= largest and gap.mean() < mean
    assert 0.5 < cpu.trusted_fraction < 0.99
    assert gpu.trusted_fraction == pytest.approx(cpu.trusted_fraction, abs=2e-3)


def test_one_pass_flow_tests_without_the_forward_flow_equal_the_plain_form():
    rng = np.random.default_rng(4)
    backward = torch.from_numpy(rng.normal(0, 0.05, (1, 2, 3, 4)).astype(np.float32))
    backward = F.interpolate(backward, size=(30, 40), mode="bicubic", align_corners=False)[0] + 1.5
    backward[:, 10:20, 15:28] -= 5.0                                    # a block moving the other way
    alone = backward.permute(1, 2, 0)[None].contiguous()                 # (1, h, w, 2)
    pair = torch.cat([-alone, alone])                                    # (2, h, w, 2)
    size = (60, 80)
    forward, b, target, grid = sampling_grid(alone, size)
    assert forward is None
    _, b2, target2, grid2 = sampling_grid(pair, size)
    assert torch.equal(b, b2) and torch.equal(target, target2) and torch.equal(grid, grid2)
    norm = b.square().sum(0)
    du = F.pad((b[:, :, 1:] - b[:, :, :-1]).square().sum(0), (0, 1))
    dv = F.pad((b[:, 1:] - b[:, :-1]).square().sum(0), (0, 0, 0, 1))
    boundary = du + dv > 0.01 * norm + 0.002
    inside = (target >= 0.0).all(0) & (target[0] <= size[1] - 1) & (target[1] <= size[0] - 1)
    bad = unreliable(None, b, target, grid)
    assert torch.equal(bad, boundary | ~inside)
    assert 0.02 < bad.float().mean() < 0.5   # the block's edges and the entering strip


def test_video_options_carry_the_flow_check():
    # The default is the backward flow alone (the H200's 1080p bench and sweep, docs/temporal.md).
    assert VideoOptions().temporal_flow_check is False
    assert TemporalBlender().flow_check is False and TemporalBlender().unchecked_trust == 0.94
    assert VideoOptions(temporal=0.9, temporal_flow_check=True).temporal_flow_check is True


@pytest.mark.parametrize("trust", [0.0, -0.5, 1.01])
def test_unchecked_trust_outside_zero_to_one_is_refused(trust):
    with pytest.raises(ValueError, match="unchecked_trust"):
        TemporalBlender(unchecked_trust=trust)


@pytest.mark.parametrize("device", ["numpy", *DEVICES])
def test_the_backward_flow_alone_blends_at_unchecked_trust_times_the_strength(device):
    """One flow: the blend is the same blend at α · unchecked_trust (the trust mask and the scene
    cut unchanged); both flows: α as given, whatever unchecked_trust is."""
    frames, _, _ = occluder_clip(6)
    stylized = flickering_stylization(frames)

    def run(flows, **settings):
        if device == "numpy":
            blender = TemporalBlender(**settings)
            out = [blender.blend(c, s, f) for c, s, f in zip(frames, stylized, flows)]
        else:
            blender = TorchTemporalBlender(**settings, device=device)
            out = [hwc(blender(chw(c, device), chw(s, device), f)) for c, s, f in zip(frames, stylized, flows)]
        return out, blender.trusted_fraction

    alone, ahead = FlowAhead(check=False), FlowAhead()
    one = [alone(i, to_gray(f)) for i, f in enumerate(frames)]
    two = [ahead(i, to_gray(f)) for i, f in enumerate(frames)]
    scaled, trusted = run(one, strength=0.9, unchecked_trust=0.5)
    plain, plain_trusted = run(one, strength=0.45, unchecked_trust=1.0)
    assert all(np.array_equal(a, b) for a, b in zip(scaled, plain))
    assert trusted == plain_trusted > 0.5
    full = run(one, strength=0.9, unchecked_trust=1.0)[0]
    assert any(not np.array_equal(a, b) for a, b in zip(scaled, full))   # the knob acts
    checked = run(two, strength=0.9, unchecked_trust=0.5)[0]
    assert all(np.array_equal(a, b) for a, b in zip(checked, run(two, strength=0.9)[0]))
