"""The last transport's share rule (`models/arbitrary/palette_share.py`): its palette distance
against a float64 NumPy reference of issue 39's measure, the share raised only for a painting
whose palette is far from the image's, and the rule captured in a CUDA graph on the GPU."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from test_arbitrary_palette import blobs

from styleforge.models.arbitrary.palette import aimed_transport, encode_palette, transport
from styleforge.models.arbitrary.palette_share import adaptive_share, measure_quantiles, palette_distance
from styleforge.training import arbitrary_eval


def reference_distance(image: torch.Tensor, painting: torch.Tensor) -> float:
    """The tool's palette_dist in float64 NumPy (its directions and 101 linear quantiles), on
    images already 256 px on the longer side (the tool's resize is then the identity)."""
    def proj(x):
        return x[0].permute(1, 2, 0).reshape(-1, 3).double().numpy() @ arbitrary_eval._DIRECTIONS
    q = np.linspace(0, 1, 101)
    return float(np.abs(np.quantile(proj(image), q, axis=0) - np.quantile(proj(painting), q, axis=0)).mean())


@pytest.mark.parametrize("size", [(256, 200), (97, 256)])
def test_distance_matches_the_float64_measure(size):
    image, painting = blobs(0, *size).round(), blobs(1, 256, 180, tint=(0.3, 0.4, 1.0)).round()
    got = float(palette_distance(image, measure_quantiles(painting))[0])
    assert got == pytest.approx(reference_distance(image, painting), abs=2e-3)
    assert float(palette_distance(painting, measure_quantiles(painting))[0]) == 0.0


def test_distance_after_the_shrink_follows_the_scorer():
    # A 512-px image is shrunk to 256 first: torch's antialiased bilinear against PIL's bilinear
    # filter with 8-bit rounding, so close, not equal.
    from PIL import Image
    image, painting = blobs(2, 512, 384).round(), blobs(3, 256, 256, tint=(1.0, 0.6, 0.2)).round()
    arr = image[0].permute(1, 2, 0).byte().numpy()
    pix = arbitrary_eval._palette_pixels(Image.fromarray(arr)) @ arbitrary_eval._DIRECTIONS
    ref = painting[0].permute(1, 2, 0).reshape(-1, 3).double().numpy() @ arbitrary_eval._DIRECTIONS
    q = np.linspace(0, 1, 101)
    want = float(np.abs(np.quantile(pix, q, axis=0) - np.quantile(ref, q, axis=0)).mean())
    assert float(palette_distance(image, measure_quantiles(painting))[0]) == pytest.approx(want, abs=0.1)


def test_share_rises_only_for_a_far_palette():
    photo = blobs(4, 64, 64)
    near = encode_palette(blobs(5, 64, 64))                          # the same kind of colours
    far = encode_palette(blobs(6, 64, 64, tint=(0.5, 0.55, 0.8)))     # a darker, bluer painting
    assert float(palette_distance(photo, far.measure)[0]) > 40
    target, cap = 12.0, 0.8
    out_near, share_near = aimed_transport(photo, near, 0.25, target, cap)
    assert float(share_near[0]) == 0.25
    torch.testing.assert_close(out_near, transport(photo, near, 0.25))
    out_far, share_far = aimed_transport(photo, far, 0.25, target, cap)
    assert 0.25 < float(share_far[0]) < cap
    # The straight line over-estimates the distance between its ends, so the rule lands at or
    # under the target, and not far under it.
    assert target - 4 < float(palette_distance(out_far, far.measure)[0]) <= target + 0.5


def test_adaptive_share_edge_cases():
    d0 = torch.tensor([20.0, 20.0, 8.0, 20.0, 20.0])
    d1 = torch.tensor([2.0, 20.0, 2.0, 25.0, 0.0])
    share = adaptive_share(d0, d1, 0.25, 11.0, 0.9)
    # on the line; no gain; already under; the full transport farther; far: capped
    torch.testing.assert_close(share, torch.tensor([0.5, 0.25, 0.25, 0.25, 0.45]))
    torch.testing.assert_close(adaptive_share(d0, d1, 0.25, 0.0, 0.9)[[0, 4]], torch.tensor([0.9, 0.9]))
    # a cap at or under the base share is the fixed share
    torch.testing.assert_close(adaptive_share(d0, d1, 0.25, 11.0, 0.1), torch.full((5,), 0.25))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_aimed_transport_in_a_cuda_graph_equals_eager():
    """The share stays on the device: the rule is captured with the engine's frame, no sync."""
    photo = blobs(7, 128, 160).cuda()
    code = encode_palette(blobs(8, 96, 96, tint=(0.15, 0.2, 0.45)).cuda())
    eager, share = aimed_transport(photo, code, 0.25, 12.0, 0.8)
    static = photo.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        aimed_transport(static, code, 0.25, 12.0, 0.8)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured, captured_share = aimed_transport(static, code, 0.25, 12.0, 0.8)
    graph.replay()
    assert float(share[0]) > 0.25
    torch.testing.assert_close(captured_share, share)
    assert (captured - eager).abs().max().item() < 1e-3


def test_options_check_the_rule_constants():
    from styleforge.engine.options import StylizeOptions
    with pytest.raises(ValueError, match="palette_target"):
        StylizeOptions(palette_target=-1.0)
    with pytest.raises(ValueError, match="palette_cap"):
        StylizeOptions(palette_cap=1.5)


@pytest.mark.parametrize("shape", [(1, 3, 64, 48), (1, 3, 512, 384), (2, 3, 37, 53)],
                         ids=["small-upscaled", "shrunk-to-256", "batch2-odd"])
def test_numpy_measure_equals_the_torch_measure(shape):
    # The CPU form's quantiles (NumPy sort) against the PyTorch form's, the shrink included.
    from styleforge.models.arbitrary.palette_share_numpy import measure_quantiles_numpy
    image = torch.cat([blobs(10 + i, *shape[-2:]) for i in range(shape[0])])
    got = measure_quantiles_numpy(image)
    assert got.dtype == np.float32 and got.shape == (shape[0], 32, 101)
    torch.testing.assert_close(torch.from_numpy(got), measure_quantiles(image), rtol=0, atol=2e-3)


@pytest.mark.parametrize("tint, batch", [((0.5, 0.55, 0.8), 1), ((1.0, 1.0, 1.0), 1), ((0.15, 0.2, 0.45), 2)],
                         ids=["far-raised", "near-base", "batch2-one-painting"])
def test_cpu_form_equals_the_torch_aimed_transport(tint, batch):
    # `aimed_transport_numpy` (the engine's CPU form) against `aimed_transport` (the GPU's): the
    # same share, the same image within the two transports' float32 rounding.
    from styleforge.models.arbitrary.palette_share_numpy import aimed_transport_numpy
    photo = torch.cat([blobs(7 + i, 96, 72) for i in range(batch)])
    code = encode_palette(torch.cat([blobs(9 + i, 64, 64, tint=tint) for i in range(batch)]))
    want, share = aimed_transport(photo, code, 0.25, 12.0, 0.8)
    got, got_share = aimed_transport_numpy(photo, code, 0.25, 12.0, 0.8)
    assert got.dtype == torch.float32 and got.shape == photo.shape and got_share.shape == (batch,)
    torch.testing.assert_close(got_share, share, atol=1e-3, rtol=0)
    assert (got_share > 0.25).all() if tint != (1.0, 1.0, 1.0) else (got_share == 0.25).all()
    assert (got - want).abs().max() < 0.05


def test_cpu_form_serves_a_batch_with_one_painting():
    # The engine's frames share one painting's code: each row as if it ran alone.
    from styleforge.models.arbitrary.palette_share_numpy import aimed_transport_numpy
    photo = torch.cat([blobs(7, 96, 72), blobs(8, 96, 72)])
    code = encode_palette(blobs(9, 64, 64, tint=(0.15, 0.2, 0.45)))
    got, share = aimed_transport_numpy(photo, code, 0.25, 12.0, 0.8)
    for i in range(2):
        alone, alone_share = aimed_transport_numpy(photo[i:i + 1], code, 0.25, 12.0, 0.8)
        torch.testing.assert_close(got[i:i + 1], alone, rtol=0, atol=1e-4)
        torch.testing.assert_close(share[i:i + 1], alone_share, rtol=0, atol=1e-6)
