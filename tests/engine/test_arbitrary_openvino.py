"""The arbitrary-style model on OpenVINO (encoder, attention, decoder): fp32 equal to PyTorch at odd sizes,
INT8 close to it and read back from the cache, `auto` on a CPU taking it, and the engine's passes,
stroke scale and degrid around it. Tiny random weights; export and calibration make these `slow`."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from styleforge.engine.openvino_runner import openvino_available
from styleforge.models.arbitrary import ArbitraryConfig, ArbitraryStyleNet, save_arbitrary
from styleforge.models.arbitrary.model import pooled
from tests.conftest import psnr, rel_error

needs_openvino = pytest.mark.skipif(not openvino_available("int8")[0], reason="openvino/nncf not installed")
pytestmark = [pytest.mark.slow, needs_openvino]


def tiny_model() -> ArbitraryStyleNet:
    torch.manual_seed(0)
    model = ArbitraryStyleNet(ArbitraryConfig(heads=2, qk_dim=4, widths=(4, 8, 8, 16, 16), max_style_tokens=16))
    with torch.no_grad():   # He init and positive biases: random ReLU stacks stay alive
        for p in model.parameters():
            torch.nn.init.kaiming_normal_(p) if p.dim() == 4 else torch.nn.init.uniform_(p, 0.0, 0.1)
    return model.eval()


def model_features(model: ArbitraryStyleNet, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The model's own encoder features, with relu2_1's 2× pool as the OpenVINO encoder hands it."""
    feats = model.encode(x)
    return {**feats, pooled("relu2_1"): F.avg_pool2d(feats["relu2_1"], 2)}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    from styleforge.engine import openvino_runner
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(openvino_runner, "CALIBRATION_SIDES", (96,))   # fewer, smaller: faster
    return tmp_path / "openvino"


def test_fp32_equals_the_model_at_odd_sizes(cache):
    from styleforge.engine.arbitrary_openvino import OpenVINOArbitraryNet
    model = tiny_model()
    net = OpenVINOArbitraryNet(model, "fp32", threads=2)
    painting = torch.rand(1, 3, 41, 50) * 255                    # not a multiple of the stride
    with torch.no_grad():
        code = model.encode_style(painting)
        ov_code = net.encode_style(painting)
        for level in code:
            assert rel_error(ov_code[level].k, code[level].k) < 1e-4
        for shape in [(1, 3, 37, 53), (1, 3, 64, 20)]:           # padded inside, cropped back
            x = torch.rand(shape) * 255
            assert rel_error(net.stylize(x, [(code, 1.0)], 0.7), model.stylize(x, [(code, 1.0)], 0.7)) < 1e-4
        batch = torch.rand(2, 3, 32, 48) * 255                   # one model for any batch
        feats, ov_feats = model_features(model, batch), net.encode(batch)
        # relu2_1 leaves the encoder pooled (only its pool is read): a quarter of the tensor
        assert list(ov_feats) == [pooled("relu2_1"), "relu3_1", "relu4_1"]
        assert ov_feats[pooled("relu2_1")].shape == (2, 8, 8, 12)
        for level, got in ov_feats.items():
            assert rel_error(got, feats[level]) < 1e-4
    assert len(list(cache.glob("*-fp32-*-arb*-encoder.xml"))) == 1
    assert len(list(cache.glob("*-fp32-*-arb*-decoder.xml"))) == 1


def test_attention_part_mixes_paintings_over_a_batch_as_the_model(cache):
    """The attention blocks on OpenVINO (SDPA on the keys' real width, one painting per run, mixed
    after) against the model's `transfer_features`: two paintings of unequal token counts, alpha
    < 1, a batch of two photos (and paintings)."""
    from styleforge.engine.arbitrary_openvino import OpenVINOArbitraryNet
    model = tiny_model()
    net = OpenVINOArbitraryNet(model, "fp32", threads=2)
    with torch.no_grad():
        codes = [model.encode_style(torch.rand(2, 3, 48, 64) * 255), model.encode_style(torch.rand(2, 3, 80, 32) * 255)]
        assert codes[0][model.config.levels[0]].k.shape != codes[1][model.config.levels[0]].k.shape
        feats = model_features(model, torch.rand(2, 3, 48, 80) * 255)
        styles = [(codes[0], 2.0), (codes[1], 1.0)]
        want = model.transfer_features(feats, styles, 0.6)
        got = net.transfer_features(feats, styles, 0.6)
    assert set(got) == set(want)
    for level in want:
        assert got[level].shape == want[level].shape
        assert rel_error(got[level], want[level]) < 1e-4
    assert len(list(cache.glob("*-fp32-*-arb*-transfer*.xml"))) == 1


def test_merged_painting_code_runs_on_openvino_as_in_the_model(cache):
    """A painting's code merged to fewer keys (`encode_style` on this path; the bias carried into
    SDPA as one more key column) against the model's `transfer_features` on the same merged code
    (`biased_attention`, PyTorch), and a code not merged (zero bias) beside it in one mix."""
    from styleforge.engine.arbitrary_openvino import OpenVINOArbitraryNet
    from styleforge.models.arbitrary.merge import merge_style_code
    model = tiny_model()
    net = OpenVINOArbitraryNet(model, "fp32", threads=2, style_tokens={"relu3_1": 5, "relu4_1": 3})
    painting = torch.rand(2, 3, 64, 64) * 255                  # a batch of paintings, as the model takes
    with torch.no_grad():
        merged = net.encode_style(painting)
        want_code = merge_style_code(model.encode_style(painting), net.style_tokens, model.config.qk_dim)
        for level, tokens in net.style_tokens.items():
            assert merged[level].k.shape[2] == tokens and merged[level].bias is not None
            assert rel_error(merged[level].k, want_code[level].k) < 1e-4
        plain = model.encode_style(torch.rand(2, 3, 48, 64) * 255)
        feats = model_features(model, torch.rand(2, 3, 48, 80) * 255)
        for styles in ([(merged, 1.0)], [(merged, 1.0), (plain, 2.0)]):
            want = model.transfer_features(feats, styles, 0.8)
            got = net.transfer_features(feats, styles, 0.8)
            for level in want:
                assert rel_error(got[level], want[level]) < 1e-4


def test_int8_runs_integer_convolutions_is_close_and_read_back_from_the_cache(cache, monkeypatch):
    from styleforge.engine import openvino_runner
    from styleforge.engine.arbitrary_openvino import OpenVINOArbitraryNet
    model = tiny_model()
    net = OpenVINOArbitraryNet(model, "int8", threads=2)
    # What the CPU plugin executes, not only what the IR holds: every convolution of the encoder
    # (conv1_1…conv4_1) and the decoder (the merge 1×1, six 3×3) in 8 bits, none left in float
    # (a float conv would be fast on AMX, which runs float layers in bf16, and slow on AVX2-VNNI);
    # the attention part's projections and FFN stay f32 (its fp32 hint).
    parts = {name: openvino_runner.executed_precisions(compiled) for name, compiled in net.compiled().items()}
    for name, count in (("encoder", 8), ("decoder", 7)):
        convs = [node for node in parts[name] if node[1] == "Convolution"]
        assert len(convs) == count, convs
        assert all(node[2] in ("u8", "i8") for node in convs), convs
    # relu2_1's pool (inside the encoder part) reads the float relu2_1, not conv2_2's 8-bit input.
    pools = openvino_runner.executed_precisions(net.compiled()["encoder"], ("Pooling",))
    assert [node[2] for node in pools if "avg_pool" in node[0]] == ["f32"], pools
    projections = [node for node in parts["attention"] if node[1] == "FullyConnected"]
    assert len(projections) == 6 and all(node[2] == "f32" for node in projections), projections
    # A shipped photo, like the calibration set (uniform noise is far outside its ranges).
    photo = torch.from_numpy(openvino_runner.calibration_images()[0][..., :64, :80].copy())
    with torch.no_grad():
        code = [(model.encode_style(torch.rand(1, 3, 64, 64) * 255), 1.0)]
        # The encoder is a VGG stack, which random He-initialised weights keep image-like; the
        # random decoder is not (its outputs reach −500), so its INT8 error says nothing about the
        # shipped weights' (docs/cpu.md has theirs): here it is only read back from the cache.
        feats, ov_feats = model_features(model, photo), net.encode(photo)
        got = net.decode(model.transfer_features(ov_feats, code))
    for level, value in ov_feats.items():
        assert 1e-4 < rel_error(value, feats[level]) < 0.1   # quantized, not fp32 by mistake; still close

    def fail(*_args, **_kwargs):
        raise AssertionError("a cached part was rebuilt")
    monkeypatch.setattr(openvino_runner, "quantize", fail)
    again = OpenVINOArbitraryNet(model, "int8", threads=2)
    with torch.no_grad():
        assert rel_error(again.decode(model.transfer_features(again.encode(photo), code)), got) < 1e-3


def test_auto_on_a_cpu_runs_the_engine_on_openvino(cache, tmp_path, monkeypatch):
    from styleforge import switches
    from styleforge.engine.arbitrary import ArbitraryStylizer
    from styleforge.engine.options import StylizeOptions
    weights = save_arbitrary(tmp_path / "tiny.safetensors", tiny_model(), dtype=torch.float32)
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(tmp_path / "p.png")
    painting = str(tmp_path / "p.png")
    x = torch.rand(1, 3, 70, 90) * 255
    monkeypatch.setenv("STYLEFORGE_OPENVINO", "1")
    switches.reset()
    try:
        base = dict(device="cpu", arbitrary_weights=str(weights), passes=1, stroke_scale=1.5)
        auto = ArbitraryStylizer(StylizeOptions(**base))
        assert auto.backend == "openvino" and auto.openvino.precision == "int8"
        fp32 = ArbitraryStylizer(StylizeOptions(**base, backend="openvino", precision="fp32"))
        ref = ArbitraryStylizer(StylizeOptions(**base, backend="reference", precision="fp32"))
        assert "openvino fp32" in fp32.describe()
        # The engine's loop (degrid, the stroke-scale resize and detail) is the same around it.
        assert psnr(fp32.stylize(x, [(painting, 1.0)]), ref.stylize(x, [(painting, 1.0)])) > 60
        assert auto.stylize(x, [(painting, 1.0)], alpha=0.5).shape == x.shape
    finally:
        monkeypatch.setenv("STYLEFORGE_OPENVINO", "0")
        switches.reset()
    assert ArbitraryStylizer(StylizeOptions(**base)).backend == "reference"


def test_two_passes_on_openvino_run_the_first_smaller(cache, tmp_path):
    """The CPU fast path's first pass at `OPENVINO_EARLY_PASS_SCALE` of the internal size, its
    output brought back for the last pass at full size; the reference path's passes unchanged."""
    from styleforge.engine import arbitrary as engine_module
    from styleforge.engine.arbitrary import ArbitraryStylizer
    from styleforge.engine.options import StylizeOptions
    weights = save_arbitrary(tmp_path / "tiny.safetensors", tiny_model(), dtype=torch.float32)
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(tmp_path / "p.png")
    x = torch.rand(1, 3, 64, 96) * 255
    base = dict(device="cpu", arbitrary_weights=str(weights), passes=2, stroke_scale=1.0, precision="fp32")
    shapes = {}
    for backend in ("openvino", "reference"):
        engine = ArbitraryStylizer(StylizeOptions(**base, backend=backend))
        net = engine.openvino or engine.model
        seen, stylize = shapes.setdefault(backend, []), net.stylize

        def recording(content, *args, seen=seen, stylize=stylize):
            seen.append(tuple(content.shape[-2:]))
            return stylize(content, *args)

        net.stylize = recording
        assert engine.stylize(x, [(str(tmp_path / "p.png"), 1.0)]).shape == x.shape
    scale = engine_module.OPENVINO_EARLY_PASS_SCALE
    assert shapes["openvino"] == [(round(64 * scale), round(96 * scale)), (64, 96)]
    assert shapes["reference"] == [(64, 96), (64, 96)]
