"""Colour distributions of the arbitrary model (`models/arbitrary/palette.py`): the transport moves an
image's colours onto a painting's while keeping their order, the sliced Wasserstein distance
against a NumPy reference, and the engine's `palette` and `degrid` options on tiny weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from styleforge.models.arbitrary.palette import encode_palette, sliced_wasserstein, transport


def blobs(seed: int, h: int = 48, w: int = 40, tint=(1.0, 1.0, 1.0)) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = F.interpolate(torch.rand(1, 3, h // 6, w // 6, generator=g), size=(h, w), mode="bicubic")
    return (x * 255 * torch.tensor(tint).view(1, 3, 1, 1)).clamp(0, 255)


def test_transport_reaches_the_painting_palette_and_keeps_order():
    photo, painting = blobs(0), blobs(1, 64, 56, tint=(1.0, 0.45, 0.2))
    code = encode_palette(painting)
    out = transport(photo, code)
    before, after = float(sliced_wasserstein(photo, painting)[0]), float(sliced_wasserstein(out, painting)[0])
    assert before > 30 and after < 0.15 * before, (before, after)
    # A colour map, not a shuffle: onto its own palette an image stays put, and onto another the
    # brightness order of its pixels mostly survives (rank correlation).
    assert (transport(photo, encode_palette(photo)) - photo).abs().mean() < 1.5
    lum = lambda x: (x * torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)).sum(1).flatten()  # noqa: E731
    ranks = lambda v: v.argsort().argsort().double()  # noqa: E731
    rho = torch.corrcoef(torch.stack([ranks(lum(photo)), ranks(lum(out))]))[0, 1]
    assert rho > 0.75
    torch.testing.assert_close(transport(photo, code, strength=0.0), photo)


def test_sliced_wasserstein_matches_numpy_and_is_differentiable():
    a, b = blobs(2), blobs(3, 32, 64)
    got = sliced_wasserstein(a, b, directions=8, quantiles=50, seed=4)
    g = torch.Generator().manual_seed(4)
    dirs = torch.randn(3, 8, generator=g)
    dirs = (dirs / dirs.norm(dim=0, keepdim=True)).double().numpy()
    pa = a[0].flatten(1).T.double().numpy() @ dirs
    pb = b[0].flatten(1).T.double().numpy() @ dirs
    levels = (np.arange(50) + 0.5) / 50
    qa = np.quantile(pa, levels, axis=0, method="hazen")   # the centred quantiles, interpolated
    qb = np.quantile(pb, levels, axis=0, method="hazen")
    assert float(got[0]) == pytest.approx(float(np.abs(qa - qb).mean()), rel=1e-4)
    assert float(sliced_wasserstein(a, a)[0]) == 0.0
    x = a.clone().requires_grad_(True)
    sliced_wasserstein(x, b).sum().backward()
    assert x.grad.abs().sum() > 0


@pytest.mark.slow
def test_engine_palette_and_degrid_options(tmp_path):
    from PIL import Image
    from test_arbitrary_model import tiny_model

    from styleforge.engine.arbitrary import ArbitraryStylizer
    from styleforge.engine.options import StylizeOptions
    from styleforge.models.arbitrary import save_arbitrary
    weights = save_arbitrary(tmp_path / "tiny.safetensors", tiny_model(), dtype=torch.float32)
    painting = blobs(5, 96, 80, tint=(0.2, 0.5, 1.0))
    image = Image.fromarray(painting[0].permute(1, 2, 0).round().byte().numpy())
    photo = blobs(6, 64, 64)

    def run(**kw):
        engine = ArbitraryStylizer(StylizeOptions(arbitrary_weights=str(weights), device="cpu", **kw))
        return engine.stylize(photo, [(image, 1.0)])

    plain, moved = run(palette="none", degrid=False), run(palette="all", palette_strength=1.0, degrid=False)
    assert float(sliced_wasserstein(moved, painting)[0]) < 0.5 * float(sliced_wasserstein(plain, painting)[0])
    # The strength is the share of the last transport: none of it is `between`, the default
    # quarter lies between that and the full transport in colour distance to the painting.
    between = run(palette="between", degrid=False)
    assert torch.equal(run(palette="all", palette_strength=0.0, degrid=False), between)
    sw = {name: float(sliced_wasserstein(image, painting)[0])
          for name, image in (("between", between), ("quarter", run(palette="all", degrid=False)), ("all", moved))}
    assert sw["all"] < sw["quarter"] < sw["between"], sw
    # The aimed share is wired in: aimed at 0 with room to 1, it is the full transport; a cap at
    # the base share is the fixed quarter.
    torch.testing.assert_close(run(palette_target=0.0, palette_cap=1.0, degrid=False), moved)
    fixed = run(palette_cap=0.25, degrid=False)
    assert float(sliced_wasserstein(fixed, painting)[0]) >= sw["quarter"] - 1e-3
    cleaned = run(palette="none", degrid=True)
    assert not torch.equal(cleaned, plain) and (cleaned - plain).abs().mean() < 0.1 * plain.std()


def _reference_transport(image: torch.Tensor, code, strength: float = 1.0) -> torch.Tensor:
    """The transport as first written (masks and selects for the ends), in float64."""
    from styleforge.models.arbitrary.palette import MAX_SAMPLE
    b, _, h, w = image.shape
    x = image.double().flatten(2)
    start, stride = x, max(1, -(-x.shape[-1] // MAX_SAMPLE))
    bases, quantiles = code.bases.double(), code.quantiles.double()
    for k in range(bases.shape[1]):
        axes = bases[:, k]
        proj = axes @ x
        values = proj[..., ::stride].sort(dim=-1).values
        n, count = values.shape[-1], quantiles.shape[-1]
        pos = (torch.arange(count, dtype=torch.float64) + 0.5) / count * n - 0.5
        lo = pos.floor().clamp(0, n - 1).long()
        hi = (lo + 1).clamp(max=n - 1)
        frac = (pos - lo.double()).clamp(0, 1)
        src = (values[..., lo] * (1 - frac) + values[..., hi] * frac).reshape(b * 3, -1)
        dst = quantiles[:, k].reshape(b * 3, -1)
        p = proj.reshape(b * 3, -1)
        idx = torch.searchsorted(src.contiguous(), p.contiguous()).clamp(1, count - 1)
        x0, x1, y0, y1 = src.gather(-1, idx - 1), src.gather(-1, idx), dst.gather(-1, idx - 1), dst.gather(-1, idx)
        t = ((p - x0) / (x1 - x0).clamp_min(1e-6)).clamp(0, 1)
        inside = y0 + t * (y1 - y0)
        moved = torch.where(p < src[..., :1], p - src[..., :1] + dst[..., :1],
                            torch.where(p > src[..., -1:], p - src[..., -1:] + dst[..., -1:], inside))
        x = x + axes.transpose(1, 2) @ (moved.view(b, 3, -1) - proj)
    x = start + (x - start) * strength if strength < 1.0 else x
    return x.view(b, 3, h, w).clamp(0, 255)


@pytest.mark.parametrize("strength, size", [(1.0, (40, 48)), (0.25, (40, 48)), (1.0, (272, 256))])
def test_transport_matches_the_float64_reference(strength, size):
    # Two images in a batch, one with colours beyond the painting's range (the map's two ends),
    # a painting with a flat patch (equal quantiles: the degenerate segments); 272×256 is over
    # MAX_SAMPLE pixels, so the quantiles come from every other pixel.
    photo = torch.cat([blobs(4, *size), (blobs(5, *size) * 1.4 - 40).clamp(0, 255)])
    painting = torch.cat([blobs(6, 64, 56, tint=(1.0, 0.5, 0.3)), blobs(7, 64, 56)])
    painting[1, :, :20] = 128.0
    code = encode_palette(painting)
    got = transport(photo, code, strength)
    want = _reference_transport(photo, code, strength)
    assert (got.double() - want).abs().max() < 0.02, float((got.double() - want).abs().max())
    assert (got.double() - want).abs().mean() < 1e-3


def test_one_painting_code_serves_a_batch_of_photos():
    # As the engine stylizes a batch with one painting: each photo's result equals its own call's.
    from styleforge.models.arbitrary.palette import aimed_transport
    photo = torch.cat([blobs(4, 40, 48), (blobs(5, 40, 48) * 1.4 - 40).clamp(0, 255)])
    code = encode_palette(blobs(6, 64, 56, tint=(1.0, 0.5, 0.3)))
    batch = transport(photo, code, 0.5)
    aimed, share = aimed_transport(photo, code, 0.25, 8.0, 0.6)
    assert share.shape == (2,)
    for i in range(2):
        assert torch.allclose(batch[i:i + 1], transport(photo[i:i + 1], code, 0.5), atol=1e-3)
        alone, alone_share = aimed_transport(photo[i:i + 1], code, 0.25, 8.0, 0.6)
        assert torch.allclose(aimed[i:i + 1], alone, atol=1e-3) and torch.allclose(share[i], alone_share[0])


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_transport_compiles_on_cuda_and_matches_eager():
    """The compile baselines compile this transport: inductor's CUDA searchsorted lowering (torch
    2.11) failed when the quantile table reached it as a reshaped view."""
    gen = torch.Generator().manual_seed(3)
    image = (torch.rand(1, 3, 300, 400, generator=gen) * 255).cuda()
    code = encode_palette((torch.rand(1, 3, 64, 64, generator=gen) * 255).cuda())
    eager = transport(image, code)
    compiled = torch.compile(transport, dynamic=False)(image, code)
    assert (compiled - eager).abs().max().item() < 0.05


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("strength, size", [(1.0, (40, 48)), (0.25, (40, 48)), (1.0, (272, 256))])
def test_numpy_transport_matches_the_float64_reference(strength, size, threads):
    # The CPU's two-phase NumPy transport (`palette_numpy.py`) on transport's cases: the quantiles
    # from the moved sample alone, then every pixel in `threads` chunks, equal to the same map.
    from styleforge.models.arbitrary.palette_numpy import transport_numpy
    photo = torch.cat([blobs(4, *size), (blobs(5, *size) * 1.4 - 40).clamp(0, 255)])
    painting = torch.cat([blobs(6, 64, 56, tint=(1.0, 0.5, 0.3)), blobs(7, 64, 56)])
    painting[1, :, :20] = 128.0
    code = encode_palette(painting)
    got = transport_numpy(photo, code, strength, threads=threads)
    want = _reference_transport(photo, code, strength)
    assert got.dtype == torch.float32 and got.shape == photo.shape
    assert (got.double() - want).abs().max() < 0.02, float((got.double() - want).abs().max())
    assert (got.double() - want).abs().mean() < 1e-3
    # A flat photo patch (many equal projections, runs of equal image quantiles): there the map
    # jumps, and which side a colour lying on the jump takes is float32 rounding (NumPy's and
    # PyTorch's matmuls round differently), so a few values may differ by the jump; nothing else.
    flat = photo.clone()
    flat[:, :, :16] = 200.0
    got = transport_numpy(flat, code, strength, threads=threads)
    gap = (got.double() - _reference_transport(flat, code, strength)).abs()
    assert (gap > 0.02).double().mean() < 1e-4 and gap.mean() < 1e-3, (int((gap > 0.02).sum()), float(gap.mean()))


@pytest.mark.parametrize("bins", [8, 8192])
def test_axis_map_equals_the_monotone_map_at_knots_ends_and_crowded_bins(bins):
    # One axis of the NumPy transport (`palette_numpy.AxisMap`: lines found by binning) against
    # palette._monotone_map on the same knots: colours on the knots (a run of equal knots among
    # them: the map's jump), beyond both ends, and knots closer than a bin (8 bins: most are).
    from styleforge.models.arbitrary.palette import _monotone_map
    from styleforge.models.arbitrary.palette_numpy import AxisMap
    rng = np.random.default_rng(0)
    src = np.sort(np.concatenate([rng.uniform(-80, 300, 200), np.full(20, 42.5), 100 + rng.uniform(0, 1e-3, 36)]))
    src = src.astype(np.float32)
    dst = np.sort(rng.uniform(0, 255, len(src))).astype(np.float32)
    x = np.concatenate([rng.uniform(-150, 400, 20_000), src, [42.5] * 5, [src[0], src[-1]]]).astype(np.float32)
    got = AxisMap(src, dst, bins)(x)
    want = _monotone_map(torch.from_numpy(x)[None].double(), torch.from_numpy(src)[None].double(),
                         torch.from_numpy(dst)[None].double())[0].numpy()
    np.testing.assert_allclose(got, want, atol=2e-3, rtol=0)


@pytest.mark.parametrize("batch, size", [(1, (37, 53)), (2, (64, 56)), (1, (272, 256))],
                         ids=["odd", "batch2", "over-max-sample"])
def test_numpy_palette_code_equals_encode_palette(batch, size):
    # The engine's CPU form (`palette_code_numpy.py`: NumPy sorts) against `encode_palette`: the
    # same bases bit for bit, the quantiles and measure within float32 rounding (0–255 units).
    # The last painting has a flat patch (runs of equal projections); 272×256 is over MAX_SAMPLE
    # pixels, so the quantiles come from every other pixel.
    from styleforge.engine.cpu_forms import palette_code
    from styleforge.models.arbitrary.palette_code_numpy import encode_palette_numpy
    painting = torch.cat([blobs(20 + i, *size, tint=(1.0, 0.6 + 0.3 * i, 0.4)) for i in range(batch)])
    painting[-1, :, :size[0] // 3] = 128.0
    want, got = encode_palette(painting), encode_palette_numpy(painting)
    assert torch.equal(got.bases, want.bases)
    assert got.quantiles.dtype == torch.float32 and got.quantiles.shape == want.quantiles.shape
    torch.testing.assert_close(got.quantiles, want.quantiles, rtol=0, atol=2e-3)
    assert got.measure.dtype == torch.float32 and got.measure.shape == (batch, 32, 101)
    torch.testing.assert_close(got.measure, want.measure, rtol=0, atol=2e-3)
    assert torch.equal(palette_code(painting).quantiles, got.quantiles)     # the engine's pick on the CPU
