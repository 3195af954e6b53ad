"""`dev/eval_warp_styles.py`'s verdict against issue 44's video bar (v2 ≤ 0.6× v1 per clip)."""
import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "dev" / "eval_warp_styles.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("eval_warp_styles", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_clip_within_the_bar_is_met(tool):
    assert tool.verdict({"pan": 0.6, "zoom": 0.31, "rotation": 0.5}) == "met"


def test_one_clip_over_with_the_mean_within_is_mean_only(tool):
    assert tool.verdict({"pan": 0.75, "zoom": 0.3, "rotation": 0.4}) == "mean only"


def test_mean_over_the_bar_is_not_met(tool):
    assert tool.verdict({"pan": 0.9, "zoom": 0.5}) == "not met"
    assert tool.verdict({"pan": 0.5, "zoom": 0.5}, bar=0.4) == "not met"


def test_no_clips_is_an_error(tool):
    with pytest.raises(ValueError, match="no clips"):
        tool.verdict({})
