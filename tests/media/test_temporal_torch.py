"""The PyTorch temporal blend equals the OpenCV one within a stated tolerance (CPU tensors here,
CUDA where there is one), its pyramid blurs stay close to the exact Gaussian, its one-pass
rewrites (area pooling, the flow tests, the trust mask) equal the forms they replaced, scene cuts
restart it without a ghost, and the flows computed ahead in threads equal the serial
ones; on CUDA `video --temporal` blends in the engine stage and cuts the warping error."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_flow_warp import texture
from test_temporal_blender import flickering_stylization

from styleforge.media.flow import dis, to_gray
from styleforge.media.flow_ahead import FlowAhead, pair_flows
from styleforge.media.synthetic import camera_clip, motion_clip
from styleforge.media.temporal import TemporalBlender
from styleforge.media.temporal_torch import (
    MIN_SIGMA,
    PyramidBlur,
    TorchTemporalBlender,
    area_down,
    sampling_grid,
    unreliable,
)
from styleforge.media.warping_error import warping_error

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def serial_flows(frames, blender):
    ahead = FlowAhead(blender.preset, blender.flow_max_side)
    return [ahead(i, to_gray(f)) for i, f in enumerate(frames)]


def chw(array, device="cpu"):
    return torch.from_numpy(array).permute(2, 0, 1).float().to(device)


def hwc(tensor):
    return tensor.permute(1, 2, 0).to(torch.uint8).cpu().numpy()


def run_both(frames, stylized, device="cpu", **settings):
    cpu, torch_blender = TemporalBlender(**settings), TorchTemporalBlender(**settings, device=device)
    flows = serial_flows(frames, cpu)
    a = [cpu.blend(c, s, f) for c, s, f in zip(frames, stylized, flows)]
    b = [hwc(torch_blender(chw(c, device), chw(s, device), f)) for c, s, f in zip(frames, stylized, flows)]
    return a, b, cpu, torch_blender


# Largest and mean |torch − OpenCV| per frame, in levels. Exact blurs (no restore, σ below a
# pyramid level): OpenCV's remap rounds coordinates to 1/32 px, the rest is the same arithmetic.
# With the restore, its band blur (8σ) runs on a pyramid level (PyramidBlur) in torch.
EXACT, PYRAMID = (2, 0.1), (6, 0.15)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("motion", ["subpixel-pan", "zoom", "pan-zoom"])
@pytest.mark.parametrize("restore", [0.0, 8.0])
def test_torch_blend_equals_the_opencv_blend(motion, device, restore):
    clip = motion_clip(texture(), motion, (96, 128), 7)
    stylized = flickering_stylization(clip.frames)
    a, b, cpu, torch_blender = run_both(clip.frames, stylized, device, restore_scale=restore)
    largest, mean = PYRAMID if restore else EXACT
    for x, y in zip(a, b):
        gap = np.abs(x.astype(int) - y.astype(int))
        assert gap.max() <= largest and gap.mean() < mean
    assert torch_blender.trusted_fraction == pytest.approx(cpu.trusted_fraction, abs=2e-3)
    assert torch_blender.restarts == cpu.restarts == 0
    # Both actually blend: the warping error falls well below the per-frame stylization's.
    assert warping_error(b, clip.flows).mean < 0.4 * warping_error(stylized, clip.flows).mean


@pytest.mark.parametrize("device", DEVICES)
def test_torch_blend_of_a_larger_stylization_and_options(device):
    clip = motion_clip(texture(), "subpixel-pan", (48, 64), 4)
    big = [cv2.resize(255 - f, (128, 96), interpolation=cv2.INTER_NEAREST) for f in clip.frames]
    a, b, _, _ = run_both(clip.frames, big, device, strength=0.6, detail_sigma=0.0, feather=3)
    assert b[-1].shape == (96, 128, 3)
    assert max(np.abs(x.astype(int) - y.astype(int)).max() for x, y in zip(a, b)) <= 2


@pytest.mark.parametrize("sigma", [1.0, 3.75, 7.5, 30.0])
def test_pyramid_blur_stays_close_to_the_exact_gaussian(sigma):
    rng = np.random.default_rng(3)
    image = cv2.resize(texture(), (960, 540)).astype(np.float32) + rng.normal(0, 20, (540, 960, 3)).astype(np.float32)
    exact = cv2.GaussianBlur(image, (round(8 * sigma + 1) | 1,) * 2, sigma)
    blur = PyramidBlur(sigma, "cpu")
    assert blur.factor == 1 if sigma < 2 * MIN_SIGMA else sigma / blur.factor >= MIN_SIGMA > sigma / (2 * blur.factor)
    got = blur(chw(image)).permute(1, 2, 0).numpy()
    gap = np.abs(got - exact)
    if blur.factor == 1:   # the same taps, the same borders
        assert gap.max() < 1e-3
    else:   # a 1/k-size level: under a level on average; more only within 2k px of the border,
        # where the level's reflection sits (k − 1)/2 px off the frame's
        inner = gap[2 * blur.factor:-2 * blur.factor, 2 * blur.factor:-2 * blur.factor]
        assert gap.mean() < 0.75 and inner.max() < 6.0
        # and it is a blur of the right width: far closer to G_σ than to G_σ/2 or G_2σ
        for other in (sigma / 2, 2 * sigma):
            wrong = cv2.GaussianBlur(image, (round(8 * other + 1) | 1,) * 2, other)
            assert np.abs(wrong - exact).mean() > 3 * gap.mean()


def cut_clip(frames_each=4, size=(96, 128)):
    """A pan over one picture, then (a cut) a pan over another: (frames, index of the first after the cut)."""
    first = camera_clip(texture(seed=1), size, frames_each, (1.3, 0.4)).frames
    second = camera_clip(texture(seed=7), size, frames_each, (-0.9, 0.6)).frames
    return first + second, frames_each


@pytest.mark.parametrize("device", DEVICES)
def test_scene_cut_restarts_without_a_ghost(device):
    frames, cut = cut_clip()
    stylized = flickering_stylization(frames)
    a, b, cpu, torch_blender = run_both(frames, stylized, device)
    assert cpu.restarts == torch_blender.restarts == 1
    for blended in (a, b):
        assert not np.array_equal(blended[cut - 1], stylized[cut - 1])   # blending before the cut
        assert np.array_equal(blended[cut], stylized[cut])               # the cut frame: its own alone
    # After the cut nothing of the first scene remains: the same as a blender started at the cut.
    _, fresh, _, _ = run_both(frames[cut:], stylized[cut:], device)
    for late, clean in zip(b[cut:], fresh):
        assert np.abs(late.astype(int) - clean.astype(int)).max() <= 1


def test_the_blend_waits_while_a_graph_is_captured():
    """The blend is CUDA work (engine.capture): while another thread holds the capture side of the
    lock, a blend neither starts nor finishes, and once the capture is over it gives the frame an
    uncontended blender gives. CPU tensors: the lock is the same whatever the device."""
    from capture_holding import waits_for_a_capture
    clip = motion_clip(texture(), "subpixel-pan", (48, 64), 2)
    stylized = flickering_stylization(clip.frames)
    flows = serial_flows(clip.frames, TemporalBlender())
    expected = run_both(clip.frames, stylized)[1][1]
    blender = TorchTemporalBlender()
    blender(chw(clip.frames[0]), chw(stylized[0]), flows[0])
    waited, out = waits_for_a_capture(lambda: blender(chw(clip.frames[1]), chw(stylized[1]), flows[1]))
    assert waited
    assert np.array_equal(hwc(out), expected)


def test_flows_ahead_from_threads_equal_serial_flows_and_skip_failed_frames():
    frames = motion_clip(texture(), "pan-zoom", (72, 96), 7).frames
    engine = dis("medium")
    serial = [None] + [pair_flows(engine, to_gray(frames[t - 1]), to_gray(frames[t])) for t in range(1, 7)]
    ahead = FlowAhead("medium", max_side=None)
    with ThreadPoolExecutor(4) as pool:   # FIFO, as the pipeline's decode workers
        threaded = list(pool.map(lambda t: ahead(t, to_gray(frames[t])), range(7)))
    assert threaded[0] is None
    assert all(np.allclose(s, t, atol=1e-4) for s, t in zip(serial[1:], threaded[1:]))
    failed = FlowAhead("medium", max_side=32)
    out = [failed(t, None if t == 3 else to_gray(frames[t])) for t in range(7)]
    assert [o is None for o in out] == [True, False, False, True, True, False, False]
    assert out[1].shape == (2, 24, 32, 2)   # at flow size: the longer side 32


@pytest.mark.gpu
@pytest.mark.slow
def test_video_temporal_on_cuda_blends_in_the_engine(styles_env, tmp_path):
    pytest.importorskip("av")
    from test_media_video import make_video, video_frames

    import styleforge
    from styleforge.media.warping_error import input_flows
    clip = make_video(tmp_path / "pan.mp4", width=128, height=96, frames=10, pan=True)
    plain = styleforge.stylize_video(clip, tmp_path / "plain.mp4", "alpha", device="cuda", crf=0)
    steady = styleforge.stylize_video(clip, tmp_path / "steady.mp4", "alpha", device="cuda", crf=0, temporal=0.8)
    assert plain.frames == steady.frames == 10
    inputs = video_frames(clip)
    flows = input_flows(inputs)
    before = warping_error(video_frames(tmp_path / "plain.mp4"), flows).mean
    after = warping_error(video_frames(tmp_path / "steady.mp4"), flows).mean
    assert after < 0.9 * before


@pytest.mark.parametrize("shape", [(6, 64, 96), (2, 36, 48), (1, 30, 44), (6, 33, 50)],
                         ids=["6ch", "2ch", "1ch", "uneven"])
@pytest.mark.parametrize("factor", [2, 4])
def test_area_down_equals_area_interpolation(shape, factor):
    # A fixed-stride pool where k divides the sides, adaptive bins elsewhere: area mode's values.
    image = torch.rand(shape, generator=torch.Generator().manual_seed(5)) * 255
    height, width = shape[1:]
    expected = F.interpolate(image[None], size=(-(-height // factor), -(-width // factor)), mode="area")[0]
    got = area_down(image, factor)
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, rtol=0, atol=1e-4)


def smooth_flows(size=(60, 80)):
    """(4, H, W): forward and backward px flows of a pan with a block moving across it (an
    occlusion and motion boundaries), plus a little smooth noise."""
    rng = np.random.default_rng(2)
    noise = F.interpolate(torch.from_numpy(rng.normal(0, 0.05, (1, 4, 3, 4)).astype(np.float32)), size=size,
                          mode="bicubic", align_corners=False)[0]
    flows = torch.tensor([1.3, -0.7, -1.3, 0.7]).view(4, 1, 1) + noise
    flows[:, 20:40, 30:55] += torch.tensor([6.0, -4.0, -6.0, 4.0]).view(4, 1, 1)
    return flows


def reliable_24c0e6c(forward, backward, target, grid):
    """The 24c0e6c formulation of the flow tests, the oracle of their one-pass rewrite."""
    carried = F.grid_sample(forward[None], grid, padding_mode="border", align_corners=True)[0]
    norm = backward.square().sum(0)
    mismatch = (carried + backward).square().sum(0) > 0.01 * (carried.square().sum(0) + norm) + 0.5
    du = F.pad((backward[:, :, 1:] - backward[:, :, :-1]).square().sum(0), (0, 1))
    dv = F.pad((backward[:, 1:] - backward[:, :-1]).square().sum(0), (0, 0, 0, 1))
    boundary = du + dv > 0.01 * norm + 0.002
    height, width = target.shape[1:]
    inside = (target >= 0.0).all(0) & (target[0] <= width - 1) & (target[1] <= height - 1)
    return ~(mismatch | boundary) & inside


@pytest.mark.parametrize("scale", [1, 2])
def test_one_pass_flow_tests_equal_the_previous_formulation(scale):
    flows = smooth_flows()
    pair = flows.view(2, 2, *flows.shape[1:]).permute(0, 2, 3, 1).contiguous()   # (2, h, w, 2)
    size = (60 * scale, 80 * scale)
    forward, backward, target, grid = sampling_grid(pair, size)
    bad = unreliable(forward, backward, target, grid)
    old = reliable_24c0e6c(forward, backward, target, grid)
    assert torch.equal(bad, ~old)
    assert 0.05 < bad.float().mean() < 0.6   # the block's edges and the frame's border both fail
    # The grid is the px target mapped to [−1, 1]: its corners are the frame's.
    x = (target[0] * 2 / (size[1] - 1) - 1, target[1] * 2 / (size[0] - 1) - 1)
    assert torch.allclose(grid[0, ..., 0], x[0], atol=1e-5) and torch.allclose(grid[0, ..., 1], x[1], atol=1e-5)


@pytest.mark.parametrize("motion", ["subpixel-pan", "zoom"])
def test_trust_mask_equals_erode_then_blur(motion):
    # Dilating the untrusted and blurring 1 − that is the reference's erode-then-blur of the trusted.
    clip = motion_clip(texture(), motion, (96, 128), 3)
    blender = TorchTemporalBlender()
    flows = torch.from_numpy(serial_flows(clip.frames, blender)[2])
    content, previous = chw(clip.frames[2]), chw(clip.frames[1])
    grid, mask = blender.trust(content, previous, flows)
    forward, backward, target, _ = sampling_grid(flows, (96, 128))
    warped = F.grid_sample(previous[None], grid, padding_mode="border", align_corners=True)[0].round()
    trusted = reliable_24c0e6c(forward, backward, target, grid) & ((content - warped).abs().amax(0) <= 30)
    eroded = -F.max_pool2d(-trusted.float()[None, None], 5, stride=1, padding=2)[0, 0].numpy()
    expected = cv2.GaussianBlur(eroded, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
    assert np.abs(mask.numpy() - expected).max() < 1e-5
    assert 0.3 < mask.mean() < 1.0


@pytest.mark.gpu
def test_the_engine_stage_blends_a_frame_without_a_host_sync():
    """--temporal's per-frame work on the engine thread (the flows' upload, the stylizer, the
    blend with its scene-cut decision, the download) only issues work: under CUDA's sync debug
    mode "error" a steady-state frame raises on any call that waits for the GPU (.item(), a
    bool of a tensor, nonzero, a pageable copy). Its pixels are the blender's own."""
    from types import SimpleNamespace

    from styleforge.media.engine_stage import EngineStage, host_pixels
    from styleforge.media.pipeline import Item
    clip = motion_clip(texture(), "subpixel-pan", (96, 128), 3)
    stylized = flickering_stylization(clip.frames)
    flows = serial_flows(clip.frames, TemporalBlender())
    settings = dict(stroke_factor=2.0, device="cuda")
    stage = EngineStage(lambda x: x, device=torch.device("cuda"), temporal=TorchTemporalBlender(**settings))
    items = [Item(t, f"frame {t}", pixels=stage.stage(f),
                  meta=SimpleNamespace(flow=stage.stage(flows[t]) if flows[t] is not None else None))
             for t, f in enumerate(clip.frames)]
    outputs = {}

    def run(t, debug):
        known = chw(stylized[t], "cuda")[None]   # the stand-in stylization, uploaded before the frame
        stage.stylizer = lambda x: known
        torch.cuda.synchronize()
        if debug:
            torch.cuda.set_sync_debug_mode("error")
        try:
            stage([items[t]])
        finally:
            torch.cuda.set_sync_debug_mode(0)
        outputs[t] = host_pixels(items[t].out)

    run(0, False)
    run(1, False)   # the shapes' grid constants are made here, once
    run(2, True)
    direct = TorchTemporalBlender(**settings)
    expected = [hwc(direct(chw(c, "cuda"), chw(s, "cuda"), f)) for c, s, f in zip(clip.frames, stylized, flows)]
    for t in range(3):
        assert np.array_equal(outputs[t], expected[t])
    assert not np.array_equal(outputs[2], stylized[2])   # it blended
