"""Painting weights (`--style-image P:W`, `style=[(painting, w), …]`) mix exactly or are refused:
huge weights are the same mix as small ones, negative / NaN / inf / all-zero weights are one
clear error before any painting is read or any photo stylized."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge import api
from styleforge.cli import main
from styleforge.engine.options import StylizeOptions, parse_style_image
from styleforge.models.arbitrary import ArbitraryConfig, ArbitraryStyleNet, save_arbitrary
from styleforge.models.arbitrary.model import style_shares


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    torch.manual_seed(0)
    model = ArbitraryStyleNet(ArbitraryConfig(heads=2, qk_dim=4, widths=(4, 8, 8, 16, 16), max_style_tokens=16))
    with torch.no_grad():
        for p in model.parameters():
            torch.nn.init.kaiming_normal_(p) if p.dim() == 4 else torch.nn.init.uniform_(p, 0.0, 0.1)
    return save_arbitrary(tmp_path_factory.mktemp("arb") / "tiny.safetensors", model, dtype=torch.float32)


@pytest.fixture
def pictures(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for name, size in (("photo.png", (36, 28)), ("a.png", (50, 40)), ("b.png", (40, 50))):
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(tmp_path / name)
        paths.append(tmp_path / name)
    api.clear_cache()
    yield paths
    api.clear_cache()


def test_shares_of_huge_weights_are_the_shares_of_small_ones():
    assert style_shares([1e308, 1e308]) == [0.5, 0.5]
    assert style_shares([3e307, 1e307]) == pytest.approx([0.75, 0.25])
    assert style_shares([5e-324, 0.0]) == [1.0, 0.0]            # the smallest subnormal still counts
    for bad in ([-1.0, 2.0], [float("nan"), 1.0], [float("inf"), 1.0], [0.0, 0.0], []):
        with pytest.raises(ValueError):
            style_shares(bad)


def test_api_huge_weights_give_the_same_image_as_equal_small_ones(pictures, weights):
    photo, a, b = pictures
    kwargs = dict(arbitrary_weights=str(weights), device="cpu")
    small = np.asarray(api.stylize(photo, style=[(a, 1.0), (b, 1.0)], **kwargs), np.int16)
    huge = np.asarray(api.stylize(photo, style=[(a, 1e308), (b, 1e308)], **kwargs), np.int16)
    assert np.abs(small - huge).max() <= 1
    assert small.std() > 5          # a real picture, not the flat grey of a 0/inf mix


def test_cli_huge_weights_give_the_same_image_as_equal_small_ones(pictures, weights, tmp_path):
    photo, a, b = pictures
    outs = []
    for w in ("1", "1e308"):
        out = tmp_path / f"out_{w}.png"
        assert main(["stylize", str(photo), "--style-image", f"{a}:{w}", "--style-image", f"{b}:{w}",
                     "--arbitrary-weights", str(weights), "--device", "cpu", "-o", str(out)]) == 0
        outs.append(np.asarray(Image.open(out), np.int16))
    assert np.abs(outs[0] - outs[1]).max() <= 1 and outs[1].std() > 5


@pytest.mark.parametrize("pairs, message", [
    ([-1.0, 2.0], "negative"), ([float("nan"), 1.0], "nan"), ([float("inf"), 1.0], "inf"),
    ([0.0, 0.0], "positive weight"), (["0.5", 1.0], "must be a number"),
])
def test_api_bad_weights_are_refused_before_any_painting_is_read(pictures, weights, pairs, message, monkeypatch):
    photo, a, b = pictures
    engine = api.get_arbitrary_engine(api.make_options(arbitrary_weights=str(weights), device="cpu"))
    monkeypatch.setattr(engine, "style_code", lambda *a: pytest.fail("a painting was read"))
    with pytest.raises(ValueError, match=message):
        api.stylize(photo, style=[(a, pairs[0]), (b, pairs[1])], arbitrary_weights=str(weights), device="cpu")
    with pytest.raises(ValueError, match=message):
        StylizeOptions(style_images=[(str(a), pairs[0]), (str(b), pairs[1])])


@pytest.mark.parametrize("weight, message", [("nan", "is nan"), ("inf", "is inf"), ("-1", "negative")])
def test_cli_bad_weight_fails_at_argument_time(pictures, weight, message, capsys, monkeypatch):
    photo, a, _ = pictures
    monkeypatch.setattr(api, "get_arbitrary_engine", lambda *a: pytest.fail("work started"))
    with pytest.raises(SystemExit) as exit_:
        main(["stylize", str(photo), "--style-image", f"{a}:{weight}", "--device", "cpu"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    with pytest.raises(ValueError, match=message):
        parse_style_image(f"{a}:{weight}")


def test_a_colon_in_the_file_name_is_not_a_weight():
    assert parse_style_image("shots/12:30.png") == ("shots/12:30.png", 1.0)
    assert parse_style_image("a.png:0.25") == ("a.png", 0.25)
