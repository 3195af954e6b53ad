"""The performance tables in README.md and docs/ are what their committed rows give, and the
rows say which commit measured them and whether the tree was clean."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from styleforge.bench import env, tables
from styleforge.bench.results import Row, append_rows

ROOT = Path(__file__).resolve().parents[2]


def test_every_table_in_readme_and_docs_matches_its_rows():
    assert tables.stale(ROOT) == [], "run: python -m styleforge.bench.tables"


def test_readme_carries_the_e2e_pipeline_and_ops_tables():
    names = {m["name"] for m in tables.MARKER.finditer((ROOT / "README.md").read_text())}
    assert {"e2e", "pipeline", "ops"} <= names


def _copy(tmp_path: Path) -> Path:
    """A repository of one README with an e2e table, and a results folder of two sizes."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# x\n\n<!-- table:e2e -->\n<!-- /table:e2e -->\n\ntext\n")
    rows = []
    for size, compile_ms, fused_ms in (("512", 1.5, 0.5), ("4k", 20.0, 8.0)):
        for provider, dtype, ms, mode in (("compile-default-fp16", "fp16", compile_ms * 1.2, "default"),
                                          ("compile-max-autotune-fp16", "fp16", compile_ms, "max-autotune"),
                                          ("fused-fp16", "fp16", fused_ms, "")):
            row = Row("e2e", provider, size=size, batch=1, dtype=dtype, median_ms=ms, p20_ms=ms, p80_ms=ms,
                      reps=30, notes={"compile_mode": mode} if mode else {})
            row.stamp("run-1", "cpu")
            row.device, row.device_name, row.commit, row.git_dirty = "cuda", "GPU-X", "abc1234def", "false"
            rows.append(row)
    append_rows(rows, tmp_path / "benchmarks" / "results")
    return tmp_path


def test_a_table_that_disagrees_with_its_rows_is_found_and_regenerated(tmp_path):
    root = _copy(tmp_path)
    assert tables.stale(root) == ["README.md: table e2e"]              # empty block: stale
    assert tables.regenerate(root) == [root / "README.md"]
    text = (root / "README.md").read_text()
    assert "| 512 | 1.500 (max-autotune) | 0.500 | 3.00 |" in text
    assert "GPU-X" in text and "commit abc1234def (clean tree)" in text and text.endswith("text\n")
    assert tables.stale(root) == []
    (root / "README.md").write_text(text.replace("| 3.00 |", "| 3.10 |"))   # a hand-edited number
    assert tables.stale(root) == ["README.md: table e2e"]
    assert tables.main(["--check", "--root", str(root)]) == 1


def test_an_unknown_table_name_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown table 'speed'"):
        tables.render("<!-- table:speed -->\n<!-- /table:speed -->", tmp_path)


def test_a_missing_row_file_gives_a_sentence_not_a_number(tmp_path):
    block = tables.pipeline_summary(tmp_path)
    assert "No rows" in block and not any(ch.isdigit() for ch in block.replace("pipeline.csv", ""))


def test_a_copy_without_git_is_checked_against_its_manifest(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "a"], check=True)
    manifest = env.write_manifest(repo).read_text()
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(repo / "a.py", copy / "a.py")
    (copy / "untracked.txt").write_text("not in the commit\n")
    assert env.check_manifest(copy, manifest) == (head, False)
    (copy / "a.py").write_text("x = 2\n")
    assert env.check_manifest(copy, manifest) == (head, True)
    (copy / "a.py").unlink()
    assert env.check_manifest(copy, manifest) == (head, True)
