"""The README's Quick start has exactly two commands, and `.ci/run` runs the second one verbatim:
the linter (pinned in the `test` extra) and then the tests."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_two_single_line_commands():
    commands = quick_start_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    assert "styleforge stylize styleforge/assets/chelsea.jpg" in commands[0]
    assert commands[1].endswith("&& python -m ruff check . && python -m pytest -q")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^test = \[[^\]]*"ruff==[\d.]+"', pyproject, re.M), "ruff is pinned in the test extra"


def test_ci_runs_the_readme_test_command():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert quick_start_commands()[1] in lines
    assert "set -euo pipefail" in lines
