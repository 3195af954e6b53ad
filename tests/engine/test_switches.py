"""The environment switches (styleforge/switches.py): parsed once, refused clearly, documented.

docs/switches.md is generated from the dataclass: this test fails, with the command that fixes it,
when the two differ. No module of the package but switches.py reads os.environ.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from styleforge import switches as switches_module
from styleforge.switches import Switches, switches_table

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_and_aliases():
    assert Switches.from_env({}) == Switches()
    parsed = Switches.from_env({"STYLEFORGE_CONV3X3": "force", "STYLEFORGE_CONV9X9": "cudnn",
                                "STYLEFORGE_GRAPH_IO": "off", "STYLEFORGE_CACHE_DIR": "~/sf",
                                "STYLEFORGE_COMMIT": " abc "})
    assert (parsed.conv3x3, parsed.conv9x9, parsed.graph_io, parsed.commit) == ("on", "off", False, "abc")
    assert parsed.cache_dir == Path("~/sf").expanduser()


def test_a_bad_value_names_the_variable_and_the_choices():
    with pytest.raises(ValueError, match="STYLEFORGE_CONV3X3='sometimes': must be one of auto, on, off"):
        Switches.from_env({"STYLEFORGE_CONV3X3": "sometimes"})


def test_read_once_until_reset(monkeypatch):
    monkeypatch.setenv("STYLEFORGE_COMMIT", "first")
    assert switches_module.switches().commit == "first"
    monkeypatch.setenv("STYLEFORGE_COMMIT", "second")
    assert switches_module.switches().commit == "first"
    switches_module.reset()
    assert switches_module.switches().commit == "second"


def test_docs_table_is_generated_from_the_dataclass():
    doc = (ROOT / "docs" / "switches.md").read_text()
    assert doc == switches_table(), ("docs/switches.md is stale: python -c 'import styleforge.switches as s; "
                                     "print(s.switches_table(), end=\"\")' > docs/switches.md")


def test_no_other_module_reads_the_environment():
    readers = [str(p.relative_to(ROOT)) for p in (ROOT / "styleforge").rglob("*.py")
               if p.name != "switches.py" and re.search(r"os\.environ|os\.getenv|getenv\(", p.read_text())]
    assert readers == []
