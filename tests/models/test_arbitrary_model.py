"""The arbitrary-style model on the CPU with tiny random weights: shapes, token costs, the AdaAttN
statistics against a float64 reference, mixing, weights files."""
from __future__ import annotations

import pytest
import torch

from styleforge.models.arbitrary import (
    ArbitraryConfig,
    ArbitraryStyleNet,
    ArbitraryWeightsError,
    load_arbitrary,
    save_arbitrary,
)
from styleforge.models.arbitrary import transfer as transfer_module
from styleforge.models.arbitrary.encoder import VGGEncoder, build_encoder

WIDTHS = (4, 8, 8, 16, 16)


def tiny_model(seed: int = 0, max_tokens: int = 16) -> ArbitraryStyleNet:
    torch.manual_seed(seed)
    model = ArbitraryStyleNet(ArbitraryConfig(heads=2, qk_dim=4, widths=WIDTHS, max_style_tokens=max_tokens))
    with torch.no_grad():   # He init and positive biases: random ReLU stacks stay alive
        for p in model.parameters():
            if p.dim() == 4:
                torch.nn.init.kaiming_normal_(p)
            elif p.dim() == 1:
                p.uniform_(0.0, 0.1)
        model.transfer["relu4_1"].fc2.weight.normal_(0, 0.1)   # zero-init would hide the FFN
    return model.eval()


def image(h: int, w: int, seed: int = 1) -> torch.Tensor:
    return torch.rand(1, 3, h, w, generator=torch.Generator().manual_seed(seed)) * 255


@pytest.mark.parametrize("h, w", [(37, 53), (5, 7), (64, 48)], ids=["odd", "tiny", "even"])
def test_arbitrary_any_content_size(h, w):
    model = tiny_model()
    code = model.encode_style(image(70, 45, 2))
    out = model.stylize(image(h, w), [(code, 1.0)])
    assert out.shape == (1, 3, h, w)
    assert torch.isfinite(out).all() and out.min() >= 0 and out.max() <= 255


def test_arbitrary_style_tokens_capped_and_content_linear(monkeypatch):
    shapes = []
    real = transfer_module.attention

    def spy(q, k, v, mask, scale):
        shapes.append((q.shape[2], k.shape[2]))
        return real(q, k, v, mask, scale)

    monkeypatch.setattr(transfer_module, "attention", spy)
    model = tiny_model(max_tokens=16)
    code = model.encode_style(image(256, 200, 3))
    model.stylize(image(64, 64), [(code, 1.0)])
    small = list(shapes)
    shapes.clear()
    model.stylize(image(128, 128), [(code, 1.0)])
    assert all(nk <= 16 for _, nk in small + shapes)
    assert [nq * 4 for nq, _ in small] == [nq for nq, _ in shapes]     # 4× pixels → 4× queries
    assert [nk for _, nk in small] == [nk for _, nk in shapes]         # the style side is fixed


def test_arbitrary_statistics_match_float64_adaattn():
    """The one-call [v, v²] attention with standardised values equals AdaAttN's mean/std."""
    torch.manual_seed(0)
    block = transfer_module.AdaAttnBlock(channels=8, key_channels=12, heads=2, qk_dim=4, ffn_hidden=8).double()
    style, style_keys = torch.rand(1, 8, 5, 6, dtype=torch.float64) * 3, torch.randn(1, 12, 5, 6, dtype=torch.float64)
    content_keys = torch.randn(1, 12, 4, 3, dtype=torch.float64)
    mean, std = block.statistics(content_keys, block.encode_style(style, style_keys))
    q = block.q_proj(content_keys.flatten(2).transpose(1, 2)).view(1, 12, 2, 4).transpose(1, 2)
    k = block.k_proj(style_keys.flatten(2).transpose(1, 2)).view(1, 30, 2, 4).transpose(1, 2)
    a = torch.softmax(q @ k.transpose(-1, -2) / 2.0, dim=-1)                      # (1, 2, 12, 30)
    v = style.flatten(2).transpose(1, 2).view(1, 30, 2, 4).transpose(1, 2)        # raw features
    m = a @ v
    s = ((a @ (v * v) - m * m).clamp_min(0) + 1e-5 * style.var(dim=(2, 3), correction=0).view(1, 2, 1, 4)).sqrt()
    want_mean = m.transpose(1, 2).reshape(1, 12, 8)
    want_std = s.transpose(1, 2).reshape(1, 12, 8)
    torch.testing.assert_close(mean, want_mean, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(std, want_std, rtol=1e-4, atol=1e-6)


def test_arbitrary_mixing_and_alpha():
    model = tiny_model()
    x = image(32, 48)
    a, b = model.encode_style(image(64, 64, 4)), model.encode_style(image(80, 64, 5))
    one = model.stylize(x, [(a, 1.0)])
    torch.testing.assert_close(model.stylize(x, [(a, 0.3), (a, 0.7)]), one, rtol=0, atol=1e-2)  # weights normalised
    assert not torch.allclose(model.stylize(x, [(a, 0.5), (b, 0.5)]), one, atol=1e-3)
    feats = model.encode(x)
    torch.testing.assert_close(model.stylize(x, [(a, 1.0)], alpha=0.0),
                               model.decode({k: feats[k] for k in model.config.levels}).clamp(0, 255),
                               rtol=0, atol=1e-2)


def test_arbitrary_weights_round_trip(tmp_path):
    model = tiny_model()
    path = save_arbitrary(tmp_path / "w.safetensors", model, {"note": "test"}, dtype=torch.float32)
    loaded, meta = load_arbitrary(path)
    assert meta["note"] == "test" and loaded.config == model.config
    x, s = image(33, 40), image(64, 64, 6)
    torch.testing.assert_close(loaded.stylize(x, [(loaded.encode_style(s), 1.0)]),
                               model.stylize(x, [(model.encode_style(s), 1.0)]))


def test_arbitrary_missing_weights_say_how(tmp_path, monkeypatch):
    from styleforge.models.arbitrary import weights
    monkeypatch.setattr(weights, "DEFAULT_PATH", tmp_path / "none.safetensors")
    with pytest.raises(ArbitraryWeightsError, match="--arbitrary-weights FILE"):
        load_arbitrary()
    (tmp_path / "bad.safetensors").write_bytes(b"junk")
    with pytest.raises(ArbitraryWeightsError, match="bad.safetensors"):
        load_arbitrary(tmp_path / "bad.safetensors")


def test_arbitrary_encoder_torchvision_keys_and_reflection():
    state = VGGEncoder(WIDTHS).state_dict()
    assert sorted({int(k.split(".")[1]) for k in state}) == [0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24]
    encoder = build_encoder(state)
    assert all(m.padding_mode == "reflect" for m in encoder.modules() if isinstance(m, torch.nn.Conv2d))
    feats = encoder(image(32, 48))
    assert [tuple(f.shape[-2:]) for f in feats.values()] == [(32, 48), (16, 24), (8, 12), (4, 6), (2, 3)]


def test_arbitrary_encoder_can_stop_at_relu4_1():
    full = VGGEncoder(WIDTHS)
    state = {k: v for k, v in full.state_dict().items() if int(k.split(".")[1]) < 19}
    short = build_encoder(state)
    assert short.depth == "relu4_1" and short.widths == WIDTHS[:4] + (512,)  # VGG16 default past the depth
    x = image(32, 48)
    want, got = full(x, last="relu4_1"), short(x)
    assert list(got) == list(want)
    for level in want:
        torch.testing.assert_close(got[level], want[level])
    with pytest.raises(ValueError, match="ends at relu4_1"):
        short(x, last="relu5_1")


def test_arbitrary_int8_weights_file_is_small_and_close_to_fp32(tmp_path):
    from safetensors.torch import load_file
    model = tiny_model()
    full = save_arbitrary(tmp_path / "fp32.safetensors", model, dtype=torch.float32)
    small = save_arbitrary(tmp_path / "int8.safetensors", model, int8=True)
    stored = load_file(str(small))
    assert stored["decoder.0.0.weight"].dtype == torch.int8
    assert max(int(k.split(".")[2]) for k in stored if k.startswith("encoder.")) < 19   # no conv4_2…conv5_1
    loaded, meta = load_arbitrary(small)
    assert meta["quantization"] == "int8-per-output-channel" and loaded.encoder.depth == "relu4_1"
    reference, _ = load_arbitrary(full)
    x, s = image(48, 40), image(64, 64, 6)
    want = reference.stylize(x, [(reference.encode_style(s), 1.0)])
    got = loaded.stylize(x, [(loaded.encode_style(s), 1.0)])
    psnr = 10 * torch.log10(255.0 ** 2 / (got - want).square().mean())
    assert psnr > 30, f"int8 weights: {psnr:.1f} dB against fp32"


def test_int8_quantization_error_is_half_a_step_at_most():
    from styleforge.models.arbitrary.weights import dequantize_int8, quantize_int8
    w = torch.randn(6, 5, 3, 3, dtype=torch.float64)
    q, scale = quantize_int8(w)
    step = scale.double().view(-1, 1, 1, 1)
    err = (dequantize_int8(q, scale).double() - w).abs()
    # scale is rounded to fp16, so the last code may sit a hair past w's amax
    assert (err <= 0.5 * step + 1e-3 * w.abs().amax()).all()
