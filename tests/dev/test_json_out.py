"""`dev/diag/json_out.py`: the --json file the diag scripts write (folder made, indented JSON)."""
import json
import runpy
from pathlib import Path

write_json = runpy.run_path(str(Path(__file__).resolve().parents[2] / "dev" / "diag" / "json_out.py"))["write_json"]


def test_writes_indented_json_into_a_new_folder(tmp_path):
    rows = [{"style": "candy", "R": 1.5}]
    write_json(str(tmp_path / "a" / "b" / "r.json"), rows)
    assert (tmp_path / "a" / "b" / "r.json").read_text() == json.dumps(rows, indent=2)
    write_json(tmp_path / "r1.json", {"flat": [1, 2]}, indent=1)
    assert (tmp_path / "r1.json").read_text() == '{\n "flat": [\n  1,\n  2\n ]\n}'


def test_no_path_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_json(None, [1])
    write_json("", [1])
    assert list(tmp_path.iterdir()) == []
