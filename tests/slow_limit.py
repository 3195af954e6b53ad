"""The default tier's time rule, a pytest plugin loaded by tests/conftest.py.

A test not marked `slow` whose call phase costs more than twice `--slow-limit` seconds (default 5;
0 turns the rule off) fails with a message saying to mark it slow; the summary lists the
default-tier tests over half the limit. The factor of two is the spread between the machines the
suite runs on (a 5.7-s test on the 2-core CI machine took 4 s on the dev machine): a test failing
there is mis-tiered on any machine, one listed is to be marked before it gets there.

A test's cost is the smaller of its wall time and the CPU time of this process (all threads) and
its reaped children: wall time alone would fail tests on a busy shared machine, CPU time alone
would count a two-thread test twice. Setup and teardown (fixtures that build
things once per module) are not counted.
"""
from __future__ import annotations

import os
import time

import pytest

SLOW_LIMIT_S = 5.0
FAIL_FACTOR = 2.0   # machines differ this much in speed; the rule must not fail on the slower one


def pytest_addoption(parser):
    parser.addoption("--slow-limit", type=float, default=SLOW_LIMIT_S, metavar="SECONDS",
                     help="list a test not marked slow whose call costs more than half this, fail it over twice this "
                          "(0: no limit)")


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    wall, cpu = time.perf_counter(), _cpu_seconds()
    yield
    item.call_cost_s = min(time.perf_counter() - wall, _cpu_seconds() - cpu)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    cost = getattr(item, "call_cost_s", None)
    if report.when != "call" or cost is None or "slow" in item.keywords:
        return
    report.user_properties.append(("cost_s", round(cost, 2)))
    limit = item.config.getoption("slow_limit")
    if limit and cost > FAIL_FACTOR * limit and report.passed:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} cost {cost:.1f} s, over twice the default tier's {limit:g} s: mark it "
                           "@pytest.mark.slow (or make it faster)")


def pytest_terminal_summary(terminalreporter, config):
    """The default-tier tests nearest the limit, so that they are marked slow before they fail."""
    limit = config.getoption("slow_limit")
    costs = [(dict(r.user_properties)["cost_s"], r.nodeid) for r in terminalreporter.stats.get("passed", [])
             if "cost_s" in dict(r.user_properties)]
    near = sorted((c for c in costs if limit and c[0] > limit / 2), reverse=True)
    if near:
        terminalreporter.write_sep("-", f"default-tier tests over half the {limit:g} s limit")
        for cost, nodeid in near:
            terminalreporter.write_line(f"{cost:6.1f} s  {nodeid}")
    if costs:
        terminalreporter.write_line(f"default tier: {len(costs)} passed tests cost {sum(c for c, _ in costs):.0f} s "
                                    "in their calls (the smaller of wall and CPU time, each)")
