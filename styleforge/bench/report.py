"""Rich tables of benchmark rows, printed last so the end of a log is the summary.

Formatting only: the numbers come from `results.Row` objects as measured. End-to-end times are
shown per frame (the row's median is per call, i.e. per batch). Not a place for any arithmetic
beyond that division.
"""
from __future__ import annotations

from functools import partial

from rich.table import Table

from .results import Row

STATUS_STYLE = {"ok": "green", "failed": "bold red", "skipped": "yellow"}


def _num(value, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) and value != "" else "–"


def _per_frame(value, batch: int):
    return value / batch if isinstance(value, float) else value


def _status(row: Row) -> str:
    return f"[{STATUS_STYLE.get(row.status, 'white')}]{row.status}[/]"


def _where(rows: list[Row]) -> str:
    r = rows[0]
    bits = [r.device_name, f"torch {r.torch}"]
    if r.cuda:
        bits += [f"CUDA {r.cuda}", f"cuDNN {r.cudnn}", f"driver {r.driver}"]
    if r.tf32:
        bits.append(f"TF32 {r.tf32}")
    bits.append(f"commit {r.commit[:10]}{' (dirty)' if r.git_dirty == 'true' else ''}")
    return " · ".join(b for b in bits if b.strip())


def e2e_table(rows: list[Row]) -> Table:
    table = Table(title=f"End to end: stylize, batch {rows[0].batch}\n{_where(rows)}", title_justify="left")
    for name in ("size", "provider", "status", "ms/frame", "p20–p80", "frames/s", "TFLOP/s",
                 "peak MB", "× eager", "× best compile", "PSNR dB", "note"):
        table.add_column(name, justify="left" if name in ("size", "provider", "status", "note") else "right",
                         overflow="fold")
    for r in rows:
        batch = r.batch if isinstance(r.batch, int) and r.batch > 0 else 1
        per_frame = partial(_per_frame, batch=batch)
        spread = (f"{per_frame(r.p20_ms):.3f}–{per_frame(r.p80_ms):.3f}" if r.status == "ok" else "–")
        psnr = "∞" if r.psnr_db == float("inf") else _num(r.psnr_db, ".1f")
        table.add_row(r.size, r.provider, _status(r), _num(per_frame(r.median_ms), ".3f"), spread,
                      _num(r.fps, ".4g"), _num(r.tflops, ".3g"), _num(r.peak_mb, ".0f"),
                      _num(r.speedup_vs_eager, ".2f"), _num(r.speedup_vs_compile, ".2f"),
                      psnr, r.error)
    return table


def ops_table(rows: list[Row]) -> Table:
    ceilings = {r.op: r for r in rows if r.kind == "ceiling"}
    title = "Ops"
    if "copy" in ceilings and "matmul" in ceilings:
        title += (f": measured ceilings copy {ceilings['copy'].gbps:.0f} GB/s, "
                  f"{ceilings['matmul'].dtype} matmul {ceilings['matmul'].tflops:.4g} TFLOP/s")
    table = Table(title=f"{title}\n{_where(rows)}", title_justify="left")
    for name in ("op", "shape", "dtype", "provider", "status", "median ms", "GB/s", "TFLOP/s",
                 "% ceiling", "× torch", "rel err", "note"):
        table.add_column(name, justify="right" if name in ("median ms", "GB/s", "TFLOP/s", "% ceiling",
                                                           "× torch", "rel err") else "left",
                         overflow="fold")
    for r in rows:
        if r.kind != "op":
            continue
        fraction = r.fraction_of_ceiling * 100 if isinstance(r.fraction_of_ceiling, float) else ""
        table.add_row(r.op, r.shape, r.dtype, r.provider, _status(r), _num(r.median_ms, ".4f"),
                      _num(r.gbps, ".4g"), _num(r.tflops, ".3g"), _num(fraction, ".0f"),
                      _num(r.notes.get("speedup_vs_torch", ""), ".2f"), _num(r.rel_err, ".1e"), r.error)
    return table


def training_table(rows: list[Row]) -> Table:
    table = Table(title=f"Training steps\n{_where(rows)}", title_justify="left")
    for name in ("provider", "batch", "image size", "status", "images/s", "ms/step", "dtype", "note"):
        table.add_column(name, overflow="fold")
    for r in rows:
        table.add_row(r.provider, str(r.batch), r.size, _status(r), _num(r.fps, ".1f"),
                      _num(r.median_ms, ".2f"), r.dtype, r.error)
    return table


def e2e_summary_markdown(rows: list[Row]) -> str:
    """Sizes × providers (ms/frame, median), then each fused precision over the best compile of its
    precision: the README's table (`tables.e2e_table`), from rows in memory."""
    from .tables import e2e_table
    return e2e_table([r.record() for r in rows])


def e2e_markdown(rows: list[Row]) -> str:
    """The end-to-end rows as Markdown with where and when they were measured (for the README):
    the summary pivot first, then every row."""
    r = rows[0]
    lines = [e2e_summary_markdown(rows), f"Measured {r.timestamp[:10]} UTC: {_where(rows)}; batch {r.batch}, "
             f"style `{r.notes.get('style', '?')}`. ms/frame is the median of {r.reps or '?'} reps "
             f"(p20–p80 in brackets); every provider's timed callable was gated against fp32 after timing; "
             f"× eager and × best compile are of the same precision. Run `{r.run_id}`.",
             "",
             "| size | provider | ms/frame | frames/s | TFLOP/s | peak MB | × eager | × best compile | status |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        batch = r.batch if isinstance(r.batch, int) and r.batch > 0 else 1
        ms = (f"{_per_frame(r.median_ms, batch):.3f} ({_per_frame(r.p20_ms, batch):.3f}–"
              f"{_per_frame(r.p80_ms, batch):.3f})" if r.status == "ok" else "–")
        status = r.status if r.status == "ok" else f"{r.status}: {r.error}"
        lines.append(f"| {r.size} | {r.provider} | {ms} | {_num(r.fps, '.4g')} | {_num(r.tflops, '.3g')} | "
                     f"{_num(r.peak_mb, '.0f')} | {_num(r.speedup_vs_eager, '.2f')} | "
                     f"{_num(r.speedup_vs_compile, '.2f')} | {status.replace('|', '/')} |")
    return "\n".join(lines) + "\n"
