"""The arbitrary model's 4-px lattice, measured as the shared tool does (`training/grid.grid_score`)
on a smooth, sky-like photo, where a lattice shows most: the shipped weights, trained with the grid
penalty, carry none (issue 39, docs/arbitrary.md), the engine's `degrid` removes what is left, and
the penalty trains a lattice out of a tiny random model whose nearest-×2 decoder stamps one."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from styleforge.training.grid import grid_penalty, grid_score

ASSETS = Path(__file__).resolve().parents[2] / "styleforge" / "assets"
SHIPPED = Path(__file__).resolve().parents[2] / "styleforge" / "styles" / "arbitrary" / "arbitrary.safetensors"


def sky(side: int = 128, seed: int = 0) -> torch.Tensor:
    """Smooth colour gradients and a soft blob, 8-bit, with a grey level of sensor noise."""
    y, x = torch.meshgrid(torch.linspace(0, 1, side), torch.linspace(0, 1, side), indexing="ij")
    blob = torch.exp(-((x - 0.6) ** 2 + (y - 0.4) ** 2) / 0.05)
    rgb = torch.stack([90 + 80 * y + 40 * blob, 140 + 50 * x, 200 - 60 * y + 20 * blob])[None]
    noise = torch.randn(rgb.shape, generator=torch.Generator().manual_seed(seed))
    return (rgb + noise).round().clamp(0, 255)


def shipped_output(degrid: bool) -> torch.Tensor:
    from styleforge.engine.arbitrary import ArbitraryStylizer
    from styleforge.engine.options import StylizeOptions
    engine = ArbitraryStylizer(StylizeOptions(device="cpu", degrid=degrid, style_size=256))
    return engine.stylize(sky(), [(ASSETS / "coffee.jpg", 1.0)]).round()


@pytest.mark.slow
@pytest.mark.skipif(not SHIPPED.is_file(), reason="shipped arbitrary weights not installed")
def test_degrid_clears_the_shipped_weights_lattice():
    assert float(grid_score(sky())[0]) < 10
    assert float(grid_score(shipped_output(degrid=True))[0]) <= 10


@pytest.mark.slow
@pytest.mark.skipif(not SHIPPED.is_file(), reason="shipped arbitrary weights not installed")
def test_shipped_weights_leave_no_lattice():
    """Trained with the grid penalty (issue 39): no lattice even without degrid. The weights
    shipped before it stamped one with a grid score in the hundreds."""
    assert float(grid_score(shipped_output(degrid=False))[0]) <= 10


@pytest.mark.slow
def test_grid_penalty_trains_the_lattice_out_of_a_tiny_decoder():
    """A tiny decoder first learns to stamp a lattice (fitted to sky + lattice: a nearest-×2 decoder
    can, as the shipped one did); then, fitted to the clean sky with the penalty beside the pixel
    term, it unlearns it, and further than the pixel term alone takes it in as many steps."""
    from test_arbitrary_model import tiny_model
    x = sky(64)
    columns = torch.tensor([6.0, 6.0, -6.0, -6.0]).repeat(16)       # 2 light / 2 dark, as shipped
    stamped = x + columns.view(1, 1, 1, 64)

    def fit(model, feats, target, steps, grid_weight):
        opt = torch.optim.Adam(list(model.decoder.parameters()) + list(model.merge.parameters()), lr=3e-3)
        for _ in range(steps):
            opt.zero_grad()
            y = model.decode(feats)
            (((y - target) / 255).square().mean() * 100 + grid_weight * grid_penalty(y)).backward()
            opt.step()
        with torch.no_grad():
            return float(grid_score(model.decode(feats))[0])

    scores = {}
    for weight in (0.0, 1.0):
        model = tiny_model(seed=3)
        with torch.no_grad():
            code = model.encode_style(sky(64, seed=1).flip(-1))
            feats = model.transfer_features(model.encode(x), [(code, 1.0)])
        learned = fit(model, feats, stamped, 150, 0.0)
        scores[weight] = (learned, fit(model, feats, x, 60, weight))
    assert scores[0.0][0] > 30, scores                      # the lattice was learned
    assert scores[1.0][1] < 10 and scores[1.0][1] < 0.5 * scores[0.0][1], scores


@pytest.mark.gpu
def test_degrid_is_captured_in_a_cuda_graph():
    """The arbitrary engine captures its whole frame, degrid included: a host-made filter tensor
    made every capture fail and the engine run eagerly (a warning per shape)."""
    from styleforge.engine.capture import capturing
    from styleforge.engine.degrid import degrid
    x = sky(96).cuda()
    want = degrid(x)
    graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        degrid(x)                      # warm-up off the capture, as the engine does
    torch.cuda.current_stream().wait_stream(side)
    with capturing(graph):
        out = degrid(x)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)
