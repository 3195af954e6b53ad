"""Which end-to-end runs the tables show: a partial newer run never displaces the latest complete
one, and the best-compile table's ratios pair rows of one run only."""
from __future__ import annotations

from styleforge.bench import e2e_runs, tables
from styleforge.bench.results import Row, append_rows, read_rows


def _row(run: str, size: str, provider: str, ms: float, *, commit: str = "c0", dirty: str = "false",
         torch: str = "2.x") -> Row:
    dtype = provider.rsplit("-", 1)[-1]
    mode = provider.removeprefix("compile-").removesuffix(f"-{dtype}") if provider.startswith("compile") else ""
    row = Row("e2e", provider, size=size, batch=1, dtype=dtype, median_ms=ms, p20_ms=ms, p80_ms=ms, reps=30,
              notes={"compile_mode": mode} if mode else {})
    row.stamp(run, "cpu")
    row.device, row.device_name, row.torch, row.commit, row.git_dirty = "cuda", "GPU-X", torch, commit, dirty
    return row


def _complete(run: str, commit: str, compile_ms: float, fused_ms: float) -> list[Row]:
    """Every default size with eager fp32, reduce-overhead compile and fused, in both precisions."""
    rows = []
    for size in e2e_runs.COMPLETE_SIZES:
        rows.append(_row(run, size, "eager-fp32", compile_ms * 5, commit=commit))
        for p in e2e_runs.PRECISIONS:
            rows += [_row(run, size, f"compile-reduce-overhead-{p}", compile_ms, commit=commit),
                     _row(run, size, f"fused-{p}", fused_ms, commit=commit)]
    return rows


def _results(tmp_path, rows: list[Row]):
    append_rows(rows, tmp_path)
    return read_rows(tmp_path, "e2e")


def test_the_complete_sizes_are_what_the_cuda_bench_measures_by_default():
    from styleforge.bench.suite import DEFAULT_SIZES
    assert ",".join(e2e_runs.COMPLETE_SIZES) == DEFAULT_SIZES["cuda"]


def test_a_partial_newer_run_does_not_displace_the_complete_one(tmp_path):
    # run-2 is newer and has eager fp32 and both fused rows, but at two of the four sizes only.
    partial = [_row("run-2", size, p, ms, commit="c2") for size in ("512", "1080p")
               for p, ms in (("eager-fp32", 9.0), ("compile-max-autotune-bf16", 3.0), ("fused-bf16", 0.5),
                             ("fused-fp16", 0.5))]
    rows = _results(tmp_path, _complete("run-1", "c1", 4.0, 1.0) + partial)
    assert {r["run_id"] for r in e2e_runs.latest_complete_run(rows)} == {"run-1"}
    assert not e2e_runs.is_complete([r for r in rows if r["run_id"] == "run-2"])
    block = tables.e2e_summary(tmp_path)
    assert "run `run-1`" in block and "run-2" not in block and "| 512 | 20.000 |" in block
    # A failed fused row makes a run incomplete too: run-3 has every row, one of them failed.
    failed = _complete("run-3", "c3", 4.0, 1.0)
    failed[-1].status, failed[-1].median_ms = "failed", ""
    append_rows(failed, tmp_path)
    assert {r["run_id"] for r in e2e_runs.latest_complete_run(read_rows(tmp_path, "e2e"))} == {"run-1"}


def test_no_complete_run_gives_a_sentence_not_a_number(tmp_path):
    _results(tmp_path, [_row("run-1", "512", "fused-bf16", 0.5)])
    for block in (tables.e2e_summary(tmp_path), tables.e2e_best_compile(tmp_path)):
        assert "No complete run" in block and "0.5" not in block


def test_a_best_compile_ratio_never_mixes_runs(tmp_path):
    rows = _complete("run-1", "c1", 4.0, 1.0)
    # run-2 (partial): a faster compile at 512 bf16, beside a fused row of its own that is slower
    # than run-1's; run-3: the fastest fp16 compile, with no fused-fp16 row in its run.
    rows += [_row("run-2", "512", "compile-max-autotune-bf16", 3.0, commit="c2"),
             _row("run-2", "512", "fused-bf16", 1.5, commit="c2"),
             _row("run-3", "512", "compile-max-autotune-fp16", 2.0, commit="c3"),
             # never the best: a dirty tree, or another torch, however fast
             _row("run-4", "512", "compile-default-bf16", 0.1, commit="c4", dirty="true"),
             _row("run-5", "512", "compile-default-bf16", 0.1, commit="c5", torch="2.y")]
    reference = e2e_runs.latest_complete_run(_results(tmp_path, rows))
    pairs = {(p.size, p.precision): p for p in e2e_runs.best_compile_pairs(read_rows(tmp_path, "e2e"), reference)}
    bf16, fp16 = pairs[("512", "bf16")], pairs[("512", "fp16")]
    assert (bf16.compile["run_id"], bf16.fused["run_id"]) == ("run-2", "run-2")
    assert bf16.ratio == 3.0 / 1.5                          # not 3.0 / 1.0 with run-1's fused row
    assert bf16.modes_measured == ("max-autotune", "reduce-overhead")
    assert fp16.compile["run_id"] == "run-3" and fp16.fused is None and fp16.ratio is None
    assert pairs[("4k", "bf16")].compile["run_id"] == "run-1" and pairs[("4k", "bf16")].ratio == 4.0
    block = tables.e2e_best_compile(tmp_path)
    modes = "max-autotune, reduce-overhead"
    assert f"| 512 | bf16 | max-autotune | 3.000 | 1.500 | 2.00 | {modes} | `run-2` | c2 |" in block
    assert f"| 512 | fp16 | max-autotune | 2.000 | – | – | {modes} | `run-3` | c3 |" in block
    assert "c4" not in block and "c5" not in block
    # The detail lists the complete run, every newer run and every cited run, each with its own line.
    detail = tables.e2e_detail(tmp_path)
    assert all(f"run `run-{n}`" in detail for n in (1, 2, 3, 4, 5))
