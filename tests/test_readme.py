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


def test_the_style_count_and_table_match_the_shipped_styles():
    """The opening line's count and the Built-in styles table name exactly what ships."""
    from styleforge.models.registry import list_styles
    names = sorted(info.name for info in list_styles())
    words = {9: "nine", 10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen",
             15: "fifteen", 16: "sixteen", 17: "seventeen", 18: "eighteen"}
    readme = (ROOT / "README.md").read_text()
    assert f"{words[len(names)]} built-in styles" in readme.split("\n## ", 1)[0]
    section = readme.split("## Built-in styles", 1)[1].split("\n## ", 1)[0]
    assert sorted(re.findall(r"^\| `(\w+)`", section, re.M)) == names
