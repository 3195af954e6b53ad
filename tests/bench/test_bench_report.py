"""The README's performance table is drawn from stored rows, never typed in."""
from styleforge.bench.report import e2e_summary_markdown
from styleforge.bench.results import Row


def _row(size, provider, ms, status="ok", dtype="bf16", mode=""):
    return Row(kind="e2e", provider=provider, size=size, batch=1, median_ms=ms, status=status, dtype=dtype,
               notes={"compile_mode": mode} if mode else {})


def test_summary_pivots_sizes_by_provider_against_the_best_compile_of_each_precision():
    rows = [_row("512", "eager-fp32", 2.5, dtype="fp32"),
            _row("512", "compile-default-bf16", 1.6, mode="default"),
            _row("512", "compile-max-autotune-bf16", 1.4, mode="max-autotune"),
            _row("512", "compile-reduce-overhead-fp16", 1.5, dtype="fp16", mode="reduce-overhead"),
            _row("512", "fused-bf16", 0.7), _row("512", "fused-fp16", 0.5, dtype="fp16"),
            _row("4k", "compile-max-autotune-bf16", 24.0, mode="max-autotune"),
            _row("4k", "fused-bf16", None, status="failed")]
    lines = e2e_summary_markdown(rows).splitlines()
    assert lines[0] == ("| size | eager-fp32 | best compile bf16 | best compile fp16 | fused-bf16 | fused-fp16 | "
                        "fused-bf16 × compile-bf16 | fused-fp16 × compile-fp16 |")
    assert lines[2] == "| 512 | 2.500 | 1.400 (max-autotune) | 1.500 (reduce-overhead) | 0.700 | 0.500 | 2.00 | 3.00 |"
    assert lines[3] == "| 4k | – | 24.000 (max-autotune) | – | failed | – | – | – |"
