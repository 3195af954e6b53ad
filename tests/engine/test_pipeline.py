"""The engine's image contract: any size in → that size out; strength, blend and colour options.

Runs on tiny random-weight styles (conftest `tiny_styles`), CPU, fp32, reference backend.
"""
import pytest
import torch
from conftest import FP32_REL_TOL, rel_error

from styleforge.engine import StylizeOptions, Stylizer
from styleforge.models.checkpoint import build_model, load_checkpoint


def make(tiny_styles, **fields) -> Stylizer:
    fields.setdefault("checkpoint", str(tiny_styles / "alpha.safetensors"))
    return Stylizer(StylizeOptions(device="cpu", precision="fp32", backend="reference", **fields))


@pytest.fixture(scope="module")
def alpha(tiny_styles):
    return make(tiny_styles)


@pytest.mark.parametrize("height,width", [(1, 1), (1, 7), (5, 3), (33, 17), (16, 16), (18, 50)],
                         ids=["1x1", "1x7", "5x3", "33x17", "16x16", "18x50"])
def test_output_size_equals_input_size(alpha, height, width):
    x = torch.rand(1, 3, height, width) * 255
    out = alpha(x)
    assert out.shape == x.shape and out.dtype == torch.float32
    assert out.min() >= 0 and out.max() <= 255


@pytest.mark.slow
def test_batch_and_non_contiguous_input(alpha):
    x = (torch.rand(2, 9, 3, 20) * 255).permute(0, 2, 3, 1)[:, :, ::2]  # (2, 3, 10, 9), strided
    assert not x.is_contiguous()
    out = alpha(x)
    assert out.shape == (2, 3, 10, 9)
    assert rel_error(out[1:], alpha(x[1:].contiguous())) <= FP32_REL_TOL  # batching changes nothing


def test_strength_0_returns_the_input_exactly(tiny_styles):
    x = torch.rand(1, 3, 21, 13) * 255
    assert torch.equal(make(tiny_styles, strength=0.0)(x), x)


def test_strength_1_is_the_plain_network_and_half_is_the_midpoint(tiny_styles, alpha):
    x = torch.rand(1, 3, 32, 24) * 255  # a multiple of 4: no padding involved
    with torch.inference_mode():
        plain = build_model(load_checkpoint(tiny_styles / "alpha.safetensors"))(x).clamp(0, 255)
    full = alpha(x)
    assert rel_error(full, plain) <= FP32_REL_TOL
    half = make(tiny_styles, strength=0.5)(x)
    assert rel_error(half, (x + full) / 2) <= FP32_REL_TOL


@pytest.mark.slow
@pytest.mark.parametrize("weights,single", [((1.0, 0.0), "alpha"), ((0.0, 2.0), "beta")])
def test_blend_endpoints_equal_the_single_style(styles_env, weights, single):
    x = torch.rand(1, 3, 20, 28) * 255
    blended = Stylizer(StylizeOptions(blend=(("alpha", weights[0]), ("beta", weights[1])),
                                      device="cpu", precision="fp32", backend="reference"))
    alone = make(styles_env, checkpoint=None, style=single)
    assert torch.equal(blended(x), alone(x))


@pytest.mark.slow
def test_blend_in_between_differs_from_both(styles_env):
    x = torch.rand(1, 3, 20, 20) * 255
    mid = Stylizer(StylizeOptions(blend="alpha:0.5,beta:0.5", device="cpu", precision="fp32"))(x)
    for name in ("alpha", "beta"):
        assert rel_error(mid, make(styles_env, checkpoint=None, style=name)(x)) > 1e-3


# ITU-R BT.601 full range (JPEG), written out here rather than imported from the code under test.
BT601 = torch.tensor([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]],
                     dtype=torch.float64)


def _ycbcr(x: torch.Tensor) -> torch.Tensor:
    """Y, Cb, Cr without the +128 chroma offset (it cancels in every comparison below)."""
    return torch.einsum("ij,njhw->nihw", BT601, x.double())


@pytest.mark.slow
def test_preserve_color_keeps_the_content_chroma(tiny_styles, alpha):
    x = 80 + torch.rand(1, 3, 24, 24) * 90       # mid-range colours: little clamping
    out = make(tiny_styles, preserve_color=True)(x)
    stylized = alpha(x)
    inside = ((out > 0.5) & (out < 254.5)).all(dim=1, keepdim=True).expand(-1, 3, -1, -1)
    assert inside.float().mean() > 0.5, "too few unclamped pixels to judge"
    got, want = _ycbcr(out), _ycbcr(x)
    chroma_gap = (got[:, 1:] - want[:, 1:]).abs()[inside[:, 1:]]
    assert chroma_gap.max() < 1e-3
    luma_gap = (got[:, :1] - _ycbcr(stylized)[:, :1]).abs()[inside[:, :1]]
    assert luma_gap.max() < 1e-3
    assert (_ycbcr(stylized)[:, 1:] - want[:, 1:]).abs().max() > 1.0  # the style did change colour


def test_checkpoint_path_is_never_a_built_in_name(styles_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="no such checkpoint file"):
        Stylizer(StylizeOptions(checkpoint="alpha", device="cpu"))
