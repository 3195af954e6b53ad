"""`--max-memory` through the CLI: refusals say sizes that differ in units that show it and name
a --max-side that then runs; runs stay within the budget (+10%), measured per call in a fresh
process (`budget_probe`); a 16000×12000 JPEG runs within 8 GiB with `--max-pixels` above
Pillow's own bomb limit."""
from __future__ import annotations

import re

import pytest
from budget_probe import make_jpeg, measure
from PIL import Image

from styleforge.cli import main
from styleforge.engine.options import parse_bytes

NEED = re.compile(r"needs about ([\d.,]+ \w+) .*the budget is ([\d.,]+ \w+)\. (.*)")


def _refusal(capsys, *args) -> re.Match:
    assert main(["stylize", *args, "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    found = NEED.search(err)
    assert found, err
    return found


@pytest.mark.parametrize("size, budget", [((420, 300), "1M"),
                                          pytest.param((1600, 1200), "40M", marks=pytest.mark.slow)],  # 4-6 s
                         ids=["1M", "40M"])
def test_a_refusal_shows_need_and_budget_apart(tmp_path, capsys, size, budget):
    photo = make_jpeg(tmp_path / "p.jpg", *size)
    need, have, advice = _refusal(capsys, str(photo), "-o", str(tmp_path / "o.jpg"), "--max-memory", budget).groups()
    assert need != have and "0.0" not in need + have
    assert have.split()[1] == need.split()[1]                 # one unit for both
    side = int(re.search(r"--max-side (\d+)", advice).group(1))
    assert 16 <= side < max(size)
    assert main(["stylize", str(photo), "-o", str(tmp_path / "o.jpg"), "--device", "cpu", "--max-memory", budget,
                 "--max-side", str(side)]) == 0           # the named side runs
    assert max(Image.open(tmp_path / "o.jpg").size) == side


@pytest.mark.slow   # a 12-96 MP stylization on the CPU: 20-90 s
@pytest.mark.parametrize("size, budget", [((4000, 3000), "260M"), ((12000, 8000), "2G")], ids=["260M", "2G"])
def test_the_side_a_refusal_names_runs_within_the_budget(tmp_path, size, budget):
    photo, out = make_jpeg(tmp_path / "big.jpg", *size), tmp_path / "out.jpg"
    args = [str(photo), "-o", str(out), "--device", "cpu", "--max-memory", budget]
    refused = measure(args, tmp_path)
    assert refused["code"] == 1, refused["stderr"]
    side = int(re.search(r"--max-side (\d+)", refused["stderr"]).group(1))
    ran = measure([*args, "--max-side", str(side)], tmp_path)
    assert ran["code"] == 0, ran["stderr"]
    assert max(Image.open(out).size) == side
    assert ran["grew"] <= 1.1 * parse_bytes(budget), f"{ran['grew'] / 2**20:.0f} MiB for a {budget} budget"


@pytest.mark.slow   # 192 MP: minutes on a 2-core machine
def test_sixteen_thousand_by_twelve_thousand_runs_within_8g(tmp_path, monkeypatch):
    photo, out = make_jpeg(tmp_path / "huge.jpg", 16000, 12000), tmp_path / "out.jpg"
    ran = measure([str(photo), "-o", str(out), "--device", "cpu", "--max-pixels", "400000000",
                   "--max-memory", "8G"], tmp_path, timeout=1800)
    assert ran["code"] == 0, ran["stderr"]
    assert ran["grew"] <= 1.1 * parse_bytes("8G"), f"{ran['grew'] / 2**30:.2f} GiB"
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)      # this test's own look at the output
    assert Image.open(out).size == (16000, 12000)
