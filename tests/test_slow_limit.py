"""The default tier's time rule (tests/slow_limit.py): a test not marked `slow` that costs more than
twice `--slow-limit` fails and says to mark it; one between half and twice the limit passes and is
listed; marked, or with the limit off, it passes."""
from pathlib import Path

PLUGIN = (Path(__file__).parent / "slow_limit.py").read_text()

BUSY = """
import time
import pytest

def spin(cpu_s):
    t = time.process_time()
    while time.process_time() - t < cpu_s:
        pass

def test_busy():
    spin(0.125)

@pytest.mark.slow
def test_busy_marked():
    spin(0.125)

def test_quick():
    pass
"""


def test_a_default_tier_test_over_the_limit_fails_and_says_to_mark_it(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")     # the inner sessions need none; saves seconds
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(test_busy=BUSY)
    result = pytester.runpytest_inprocess("--slow-limit", "0.05", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_busy.py::test_busy cost 0.* s, over twice the default tier's 0.05 s: "
                                 "mark it @pytest.mark.slow*"])
    assert "test_busy_marked" not in "\n".join(line for line in result.outlines if "FAILED" in line)
    result = pytester.runpytest_inprocess("--slow-limit", "0.1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)                               # 0.125 s: under twice 0.1, listed only
    result.stdout.fnmatch_lines(["*default-tier tests over half the 0.1 s limit*", "*0.* s  test_busy.py::test_busy"])
    result = pytester.runpytest_inprocess("--slow-limit", "0", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
