"""The README's performance table is drawn from stored rows, never typed in."""
from styleforge.bench.report import e2e_summary_markdown
from styleforge.bench.results import Row


def _row(size, provider, ms, vs_compile=None, status="ok"):
    return Row(kind="e2e", provider=provider, size=size, batch=1, median_ms=ms,
               speedup_vs_compile=vs_compile, status=status)


def test_summary_pivots_sizes_by_provider_with_ratios():
    rows = [_row("512", "eager-fp32", 2.5), _row("512", "compile", 1.4, 1.0),
            _row("512", "fused-fp16", 0.7, 2.0), _row("4k", "compile", 24.0, 1.0),
            _row("4k", "fused-fp16", None, None, status="failed")]
    lines = e2e_summary_markdown(rows).splitlines()
    assert lines[0] == "| size | eager-fp32 | compile | fused-fp16 | fused-fp16 × compile |"
    assert lines[2] == "| 512 | 2.500 | 1.400 | 0.700 | 2.00 |"
    assert lines[3] == "| 4k | – | 24.000 | failed | – |"
