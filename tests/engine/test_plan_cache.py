"""The fused engine's timed choices survive the process (engine/plan_cache.py)."""
from __future__ import annotations

import json

import pytest
import torch
from conftest import random_net

from styleforge.engine.autotune import LayerChoice
from styleforge.engine.plan_cache import PlanCache
from styleforge.engine.runner import FusedRunner


def test_choices_round_trip_per_dtype(tmp_path):
    cache = PlanCache(tmp_path / "plans.json")
    plan = LayerChoice("hybrid", "faster", 1.0, 2.0, {"cudnn": 2.0, "hybrid": 1.0})
    cache.record(torch.bfloat16, "residual", (1, 3, 512, 384), plan)
    cache.record(torch.bfloat16, "conv1", (1, 3, 512, 384), LayerChoice("styleforge", "faster", 0.1, 0.3))
    cache.record(torch.float16, "residual", (1, 3, 512, 384), LayerChoice("cudnn", "slower", 2.0, 2.0, {"cudnn": 2.0}))
    again = PlanCache(tmp_path / "plans.json").choices(torch.bfloat16)
    assert set(again) == {("residual", (1, 3, 512, 384)), ("conv1", (1, 3, 512, 384))}
    got = again[("residual", (1, 3, 512, 384))]
    assert (got.provider, got.reason, got.plans) == ("hybrid", "cached", {"cudnn": 2.0, "hybrid": 1.0})
    assert PlanCache(tmp_path / "plans.json").choices(torch.float16)[("residual", (1, 3, 512, 384))].provider == "cudnn"


def test_a_damaged_file_is_ignored_and_rewritten(tmp_path):
    path = tmp_path / "plans.json"
    path.write_text("{not json")
    cache = PlanCache(path)
    assert cache.choices(torch.bfloat16) == {}
    cache.record(torch.bfloat16, "conv1", (1, 3, 64, 64), LayerChoice("cudnn", "slower", 0.2, 0.1))
    assert json.loads(path.read_text())["format"] == 1
    path.write_text(json.dumps({"format": 1, "choices": {"bfloat16|conv1|1x3xbad": {"provider": "cudnn"}}}))
    assert PlanCache(path).choices(torch.bfloat16) == {}, "an entry it cannot read is timed again"


def test_an_unwritable_cache_only_costs_the_timing(tmp_path):
    (tmp_path / "file").write_text("")
    cache = PlanCache(tmp_path / "file" / "plans.json")     # its folder is a file
    cache.record(torch.bfloat16, "conv1", (1, 3, 64, 64), LayerChoice("cudnn", "slower", 0.2, 0.1))
    assert cache.choices(torch.bfloat16)[("conv1", (1, 3, 64, 64))].provider == "cudnn"


def test_runner_takes_cached_plans_and_its_own_win(tmp_path):
    cache = PlanCache(tmp_path / "plans.json")
    cache.record(torch.float32, "residual", (1, 3, 64, 64), LayerChoice("hybrid", "faster", 1.0, 2.0, {"hybrid": 1.0}))
    runner = FusedRunner(random_net(0), torch.device("cpu"), torch.float32)
    mine = LayerChoice("cudnn", "slower", 1.0, 1.0, {"cudnn": 1.0})
    runner.layer_choices[("residual", (1, 3, 32, 32))] = mine
    cache.record(torch.float32, "residual", (1, 3, 32, 32), LayerChoice("hybrid", "faster", 0.5, 1.0, {"hybrid": 0.5}))
    runner.layer_choices.adopt_plan_cache(PlanCache(tmp_path / "plans.json"))
    assert runner.layer_choices.known_plan((1, 3, 64, 64)).provider == "hybrid"
    assert runner.layer_choices[("residual", (1, 3, 32, 32))] is mine


@pytest.mark.gpu
def test_a_new_runner_does_not_time_plans_again(loaded, monkeypatch, tmp_path):
    from styleforge.engine import autotune
    cache_path = tmp_path / "plans.json"
    first = FusedRunner(random_net(0), torch.device("cuda"), torch.bfloat16)
    first.layer_choices.adopt_plan_cache(PlanCache(cache_path))
    x = torch.rand(1, 3, 64, 96, device="cuda") * 255
    first(x)
    want = first(x)                                   # the second call times the plans and captures
    if first.default_plan() == "conv3x3":            # Hopper: the plans were timed, so kept
        assert ("residual", (1, 3, 64, 96)) in PlanCache(cache_path).choices(torch.bfloat16)
    second = FusedRunner(random_net(0), torch.device("cuda"), torch.bfloat16)
    second.layer_choices.adopt_plan_cache(PlanCache(cache_path))
    monkeypatch.setattr(autotune, "choose_plan", lambda *a, **k: pytest.fail("plans timed again"))
    second(x)
    got = second(x)
    assert second.captures == 1
    assert float((got - want).norm() / want.norm()) < 2e-2
