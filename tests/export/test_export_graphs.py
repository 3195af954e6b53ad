"""The export graphs, run eagerly: the same numbers as the engine at sizes on and off the pad step."""
import pytest
import torch

from styleforge.engine.options import StylizeOptions
from styleforge.engine.pipeline import Stylizer
from styleforge.export.check import photos, psnr
from styleforge.export.graphs import StyleGraph, pad_amount
from styleforge.models.checkpoint import build_model


def test_pad_amount_reaches_the_next_multiple():
    for side in range(16, 40):
        pad = pad_amount(side, 4)
        assert 0 <= pad < 4 and (side + pad) % 4 == 0


@pytest.mark.parametrize("batch,height,width", [(1, 16, 16), (2, 17, 23), (1, 40, 64)])
def test_style_graph_is_the_engine(styles_env, batch, height, width):
    engine = Stylizer(StylizeOptions(style="alpha", device="cpu", precision="fp32", backend="reference",
                                     stroke_scale=1.0, tiling="off"))
    graph = StyleGraph(build_model(engine.checkpoint))
    x = photos(batch, height, width)
    with torch.no_grad():
        got = graph(x)
    want = torch.cat([engine(item[None]) for item in x])
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-3), psnr(got, want)


@pytest.mark.slow
def test_arbitrary_graph_is_the_engine():
    """Two photos (the engine runs them one by one), one painting, the default two passes."""
    from styleforge.export.check import reference_and_inputs
    from styleforge.export.graphs import ArbitraryGraph
    from styleforge.export.options import ExportOptions
    from styleforge.models.arbitrary import load_arbitrary
    options = ExportOptions(arbitrary=True, style_size=64)
    reference, (painting,) = reference_and_inputs(options)
    graph = ArbitraryGraph(load_arbitrary()[0], options.passes)
    x = photos(2, 37, 50)
    with torch.no_grad():
        got = graph(x, painting)
    want = reference(x)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-2), psnr(got, want)
