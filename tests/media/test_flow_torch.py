"""flow_torch's Lucas–Kanade against known motion (translation, zoom, rotation), against DIS on a
bench clip, its stream bookkeeping, and on CUDA: the same flows and no host sync."""
from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import torch
from test_flow_warp import interior, texture

from styleforge.bench.temporal_clips import render_scene
from styleforge.media import flow_torch
from styleforge.media.flow import FlowEstimator, inside, reliable, to_gray
from styleforge.media.flow_ahead import FlowAhead
from styleforge.media.synthetic import motion_clip
from styleforge.media.temporal_torch import TorchTemporalBlender


def grey(frame: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(to_gray(frame)).float()


def end_point_error(estimated: np.ndarray, exact: np.ndarray, keep: np.ndarray) -> float:
    return float(np.sqrt(((estimated - exact) ** 2).sum(-1))[keep].mean())


@pytest.mark.parametrize("motion", ["integer-pan", "subpixel-pan", "zoom", "pan-zoom"])
def test_both_flows_match_the_exact_camera_flow(motion):
    clip = motion_clip(texture(), motion, (64, 80), 3)
    forward, backward = clip.flows[1]
    pair = flow_torch.pair_flows(grey(clip.frames[1]), grey(clip.frames[2])).numpy()
    assert pair.shape == (2, 64, 80, 2) and pair.dtype == np.float32
    # DIS fast lands at 0.002–0.07 px here; the dense LK within 0.11 on every motion.
    assert end_point_error(pair[0], forward, interior(inside(forward))) < 0.15, motion
    assert end_point_error(pair[1], backward, interior(inside(backward))) < 0.15, motion


def rotated(photo: np.ndarray, degrees: float, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(the view of `photo` turned by `degrees` about its centre, the exact flow from the unturned
    view to it): view(x) = photo(c + R(x − c)), so the unturned x is at c + Rᵀ(x − c) in it."""
    height, width = size
    top, left = (photo.shape[0] - height) // 2, (photo.shape[1] - width) // 2
    c = np.array([left + (width - 1) / 2, top + (height - 1) / 2])
    t = math.radians(degrees)
    rotation = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    affine = np.hstack([rotation, (c - rotation @ c)[:, None]])
    affine[:, 2] += rotation @ np.array([left, top])      # view pixel x ↦ photo point of x + (left, top)
    view = cv2.warpAffine(photo, affine, (width, height), flags=cv2.INTER_CUBIC | cv2.WARP_INVERSE_MAP)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    d = np.stack([xs + left - c[0], ys + top - c[1]], -1)
    flow = d @ rotation - d                                   # Rᵀ d − d, row vectors
    return view, flow.astype(np.float32)


def test_a_rotation_matches_its_exact_flow():
    photo = texture(160, 200, seed=3)
    still, _ = rotated(photo, 0.0, (72, 96))
    turned, exact = rotated(photo, 1.5, (72, 96))      # up to ~1.6 px at the corners
    pair = flow_torch.pair_flows(grey(still), grey(turned)).numpy()
    keep = interior(inside(exact), 8)
    assert np.abs(exact[keep]).max() > 1.0
    assert end_point_error(pair[0], exact, keep) < 0.15


def test_flows_agree_with_dis_on_a_bench_clip():
    """On the bench's moving-subject clip (a cut-out crossing a photo: occlusion edges) the LK
    pair stays near DIS medium at full size, and no further from it than DIS fast at that
    size is, plus a margin, over the pixels medium trusts."""
    photos = [texture(180, 240, seed=s) for s in range(3)]
    frames = render_scene("subject", photos, (90, 160), 3)
    estimator, fast = FlowEstimator("medium"), FlowEstimator("fast")
    reference = estimator(frames[1], frames[2]), estimator(frames[2], frames[1])
    keeps = reliable(reference[1], reference[0]), reliable(reference[0], reference[1])
    pair = flow_torch.pair_flows(grey(frames[1]), grey(frames[2])).numpy()
    ours = [end_point_error(f, r, k) for f, r, k in zip(pair, reference, keeps)]
    dis_fast = [end_point_error(fast(a, b), r, k)
                for (a, b), r, k in zip(((frames[1], frames[2]), (frames[2], frames[1])), reference, keeps)]
    assert max(ours) < 0.3, ours
    assert all(o < d + 0.15 for o, d in zip(ours, dis_fast)), (ours, dis_fast)


def test_device_flows_follow_the_stream_and_restart_on_gaps():
    clip = motion_clip(texture(), "subpixel-pan", (64, 80), 4)
    rgb = [torch.from_numpy(f).permute(2, 0, 1).float() for f in clip.frames]
    flows = flow_torch.DeviceFlows(max_side=40)
    assert flows(0, rgb[0]) is None                               # the first frame
    pair = flows(1, rgb[1])
    assert pair.shape == (2, 32, 40, 2)                           # flow.shrink's size
    expected = flow_torch.pair_flows(flow_torch.shrink(flow_torch.luma(rgb[0]), 40),
                                     flow_torch.shrink(flow_torch.luma(rgb[1]), 40))
    assert torch.equal(pair, expected)
    # The exact backward flow is (1.37, −0.61) px at 64×80: half that at the flow size (a 32×40
    # copy keeps little of the texture: 0.63, −0.27 there).
    assert np.allclose(pair[1].reshape(-1, 2).median(0).values.numpy(), (0.685, -0.305), atol=0.08)
    assert flows(3, rgb[3]) is None                               # frame 2 never came: a restart
    assert flows(4, torch.zeros(3, 32, 48)) is None               # another size
    flows.reset()
    assert flows(5, rgb[0]) is None


def test_the_blender_trusts_lk_flows_as_it_trusts_dis_flows():
    """The blend's masks on a sub-pixel pan: LK pair flows leave nearly as many pixels trusted
    as the video path's DIS flows (FlowAhead) do (0.85 against 0.91 on these 64×80 frames; with
    the first settings tried, a 2-px window and little damping, the motion-boundary test
    rejected LK's rougher flow and 0.74 were left)."""
    clip = motion_clip(texture(), "subpixel-pan", (64, 80), 3)
    rgb = [torch.from_numpy(f).permute(2, 0, 1).float() for f in clip.frames]
    ahead, device = FlowAhead(max_side=None), flow_torch.DeviceFlows(max_side=None)
    trusted = {}
    for name, source in (("dis", lambda i: ahead(i, to_gray(clip.frames[i]))), ("lk", lambda i: device(i, rgb[i]))):
        blender = TorchTemporalBlender(strength=0.9)
        for i in range(3):
            blender(rgb[i], rgb[i], source(i))
        trusted[name] = blender.trusted_fraction
    assert trusted["dis"] > 0.8
    assert trusted["lk"] >= trusted["dis"] - 0.08, trusted


def test_settings_are_checked():
    with pytest.raises(ValueError):
        flow_torch.LucasKanadeSettings(iterations=0)
    with pytest.raises(ValueError, match="one size"):
        flow_torch.pair_flows(torch.zeros(8, 8), torch.zeros(8, 9))
    with pytest.raises(ValueError, match="max_side"):
        flow_torch.DeviceFlows(max_side=8)


@pytest.mark.gpu
def test_cuda_flows_equal_the_cpu_flows_without_a_host_sync():
    clip = motion_clip(texture(), "pan-zoom", (64, 80), 3)
    a, b = grey(clip.frames[1]), grey(clip.frames[2])
    on_cpu = flow_torch.pair_flows(a, b)
    a, b = a.cuda(), b.cuda()
    flow_torch.pair_flows(a, b)          # the per-shape constants are made on the first call
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        on_gpu = flow_torch.pair_flows(a, b)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert (on_gpu.cpu() - on_cpu).abs().max() < 1e-3


def test_video_options_check_the_flow_settings_and_threads_are_restored():
    import cv2

    from styleforge.media.flow import opencv_threads
    from styleforge.media.options import VideoOptions
    for bad in (dict(temporal_flow="raft"), dict(temporal_flow_preset="slow"), dict(temporal_flow_size=8),
                dict(temporal_flow_threads=0)):
        with pytest.raises(ValueError, match="temporal flow"):
            VideoOptions(**bad)
    before = cv2.getNumThreads()
    with opencv_threads(1):
        assert cv2.getNumThreads() == 1
    assert cv2.getNumThreads() == before


@pytest.mark.gpu
def test_the_engine_stage_makes_the_flows_on_the_gpu_without_a_host_sync():
    """With DeviceFlows the stage computes each frame's pair flows from its content (no flows
    from the workers) and blends with them; a steady-state frame makes no host sync, and its
    pixels are those of the blender given the same flows directly."""
    from types import SimpleNamespace

    from styleforge.media.engine_stage import EngineStage, host_pixels
    from styleforge.media.pipeline import Item
    clip = motion_clip(texture(), "subpixel-pan", (96, 128), 3)
    settings = dict(stroke_factor=2.0, device="cuda")
    stage = EngineStage(lambda x: x, device=torch.device("cuda"), temporal=TorchTemporalBlender(**settings))
    stage.flows = flow_torch.DeviceFlows(64)
    items = [Item(t, f"frame {t}", pixels=stage.stage(f), meta=SimpleNamespace(flow=None))
             for t, f in enumerate(clip.frames)]
    outputs = {}
    for t in range(3):
        torch.cuda.synchronize()
        if t == 2:
            torch.cuda.set_sync_debug_mode("error")
        try:
            stage([items[t]])
        finally:
            torch.cuda.set_sync_debug_mode(0)
        outputs[t] = host_pixels(items[t].out)
    direct, flows = TorchTemporalBlender(**settings), flow_torch.DeviceFlows(64)
    for t, frame in enumerate(clip.frames):
        content = torch.from_numpy(frame).cuda().permute(2, 0, 1).float()
        expected = direct(content, content, flows(t, content)).round().clamp(0, 255).to(torch.uint8)
        assert np.array_equal(outputs[t], expected.permute(1, 2, 0).cpu().numpy()), t
    assert direct.trusted_fraction > 0.8
