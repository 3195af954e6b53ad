"""TemporalBlender: lowers the warping error of a flickering clip, leaves new content alone,
restarts at scene cuts, and fits the video pipeline's frame_filter signature."""
from __future__ import annotations

import numpy as np
import pytest
from test_flow_warp import texture

from styleforge.media.synthetic import motion_clip
from styleforge.media.temporal import MAX_GAIN, TemporalBlender, restore_gain
from styleforge.media.warping_error import warping_error


def flickering_stylization(frames, seed=0, blur=3.0):
    """A stand-in for a per-frame style network: colour inversion plus independent noise per
    frame, smooth (blurred by `blur` px) or per pixel (blur 0)."""
    import cv2
    rng = np.random.default_rng(seed)
    out = []
    for f in frames:
        noise = rng.normal(0, 12, f.shape).astype(np.float32)
        if blur:
            noise = cv2.GaussianBlur(noise, (0, 0), blur) * blur * 2
        out.append(np.clip(255.0 - f + noise, 0, 255).astype(np.uint8))
    return out


@pytest.mark.parametrize("blur, detail_sigma", [(3.0, 2.0), (0.0, 0.0)])
def test_blending_cuts_the_warping_error(blur, detail_sigma):
    clip = motion_clip(texture(), "subpixel-pan", (48, 64), 8)
    stylized = flickering_stylization(clip.frames, blur=blur)
    blender = TemporalBlender(strength=0.8, detail_sigma=detail_sigma)
    blended = [blender(c, s) for c, s in zip(clip.frames, stylized)]
    before = warping_error(stylized, clip.flows).mean
    after = warping_error(blended, clip.flows).mean
    assert after < 0.4 * before
    assert blended[0].dtype == np.uint8 and blended[0].shape == stylized[0].shape
    assert np.array_equal(blended[0], stylized[0])            # nothing to blend with yet
    # The picture stays the stylization's (noise averaged), not a drifting smear.
    mean_gap = np.abs(blended[-1].astype(float) - (255.0 - clip.frames[-1])).mean()
    assert mean_gap < 12


def test_fine_detail_stays_the_current_frames():
    clip = motion_clip(texture(), "integer-pan", (48, 64), 6)
    stylized = flickering_stylization(clip.frames, blur=0.0)
    blender = TemporalBlender(strength=0.8, detail_sigma=2.0)
    blended = [blender(c, s) for c, s in zip(clip.frames, stylized)]
    # Per-pixel noise is finer than σ: kept, so the warping error hardly moves.
    assert warping_error(blended, clip.flows).mean > 0.6 * warping_error(stylized, clip.flows).mean


def test_detail_blur_grows_with_the_networks_stroke_factor():
    # Strokes painted at half size and upscaled 2× are twice as wide: σ 1 at the network's scale
    # blurs like σ 2 px, and unlike σ 1 px.
    clip = motion_clip(texture(), "subpixel-pan", (48, 64), 5)
    stylized = flickering_stylization(clip.frames, blur=1.0)

    def run(**settings):
        blender = TemporalBlender(strength=0.8, **settings)
        return [blender(c, s) for c, s in zip(clip.frames, stylized)]
    scaled, wide, narrow = run(detail_sigma=1.0, stroke_factor=2.0), run(detail_sigma=2.0), run(detail_sigma=1.0)
    assert all(np.array_equal(a, b) for a, b in zip(scaled, wide))
    assert not np.array_equal(scaled[-1], narrow[-1])
    with pytest.raises(ValueError):
        TemporalBlender(stroke_factor=0.5)


def test_energy_restore_gives_the_fine_band_its_contrast_back():
    import cv2
    rng = np.random.default_rng(3)

    def strokes():
        return cv2.GaussianBlur(rng.normal(128, 60, (64, 80, 3)).astype(np.float32), (0, 0), 1.0)

    def fine(image):   # the band the restore works on: finer than restore_scale·σ = 4 px
        return float(((image - cv2.GaussianBlur(image, (0, 0), 4.0)) ** 2).mean())
    current, other = strokes(), strokes()
    blended = 0.5 * current + 0.5 * other          # strokes that do not line up: contrast falls
    blender = TemporalBlender(detail_sigma=1.0, restore_scale=4.0, restore_window=4.0)
    restored = blender._restore(current, blended)
    assert fine(blended) < 0.6 * fine(current)
    assert fine(restored) == pytest.approx(fine(current), rel=0.15)
    # The coarse part is the blend's; a frame blended with itself is left as it is.
    coarse = cv2.GaussianBlur(restored - blended, (0, 0), 8.0)
    assert np.abs(coarse).mean() < 0.05 * np.abs(restored - blended).mean()
    assert np.allclose(blender._restore(current, current), current, atol=1e-3)
    # The gain only amplifies, and at most MAX_GAIN times (a faded blend is not blown up).
    assert list(restore_gain(np.array([1e4, 0.0, 3.5]), np.array([0.0, 1e4, 1.0]))) == [MAX_GAIN, 1.0, 1.5]
    with pytest.raises(ValueError):
        TemporalBlender(restore_window=0.0)


def test_strength_zero_passes_through():
    clip = motion_clip(texture(), "integer-pan", (32, 40), 3)
    stylized = flickering_stylization(clip.frames)
    blender = TemporalBlender(strength=0.0)
    assert all(np.array_equal(blender(c, s), s) for c, s in zip(clip.frames, stylized))


def test_scene_cut_restarts_and_reset_forgets():
    first = texture(seed=0)[:48, :64]
    other = texture(seed=5)[:48, :64]
    blender = TemporalBlender(strength=0.8)
    blender(first, first)
    out = blender(other, other)
    assert blender.restarts == 1 and np.array_equal(out, other)
    blender.reset()
    assert np.array_equal(blender(first, 255 - first), 255 - first)


def test_stylized_of_another_size_is_blended_at_its_size():
    clip = motion_clip(texture(), "integer-pan", (32, 40), 3)
    big = [np.repeat(np.repeat(255 - f, 2, 0), 2, 1) for f in clip.frames]
    blender = TemporalBlender(strength=0.5)
    outs = [blender(c, s) for c, s in zip(clip.frames, big)]
    assert outs[-1].shape == (64, 80, 3)


@pytest.mark.parametrize("bad", [np.zeros((8, 8), np.uint8), np.zeros((8, 8, 3), np.float32)])
def test_rejects_non_rgb_uint8(bad):
    with pytest.raises(ValueError, match="uint8"):
        TemporalBlender()(bad, bad)


def test_rejects_bad_strength():
    with pytest.raises(ValueError, match="strength"):
        TemporalBlender(strength=1.0)
