"""Every performance table in README.md and docs/ regenerated from the committed rows.

A table sits between `<!-- table:NAME -->` and `<!-- /table:NAME -->` in a Markdown file; `TABLES`
maps NAME to a function of the results folder that returns the block: the table, and under it
where its rows were measured (GPU, driver, torch, CUDA, cuDNN, the commit and whether the tree
was clean, the date and the run id). A block whose rows do not exist yet says so, with no number.
`python -m styleforge.bench.tables` (or `styleforge bench --tables`) rewrites every block in
README.md and docs/*.md; `--check` rewrites nothing and exits 1 naming each block that differs
from its rows (a CPU test runs it). Comparisons are precision-matched: each fused precision
against the fastest torch.compile mode of the same precision. Formatting only: which e2e runs and
rows may be shown together is `e2e_runs.py`'s rule, the numbers are the rows' medians, and a ratio
is the quotient of two medians of one run. Over 400 lines because it holds one short formatter per
table (nineteen); splitting them by table would scatter `TABLES`.
"""
from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from pathlib import Path
from typing import Callable

from .e2e_runs import (
    COMPLETE_PROVIDERS,
    COMPLETE_SIZES,
    best_compile_pairs,
    by_run,
    compile_mode,
    latest_complete_run,
    ms_per_frame,
)
from .results import DEFAULT_OUTPUT, as_float, latest_run, read_rows
from .tables_arbitrary import arbitrary_speed_summary
from .tables_quality import arbitrary_quality_summary
from .tables_temporal import temporal_summary

REPO_ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"(<!-- table:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.S)
E2E_COLUMNS = ("eager-fp32", "eager-bf16", "eager-fp16")
FUSED = ("fused-bf16", "fused-fp16")


def _ms(row: dict | None) -> float | None:
    return as_float(row.get("median_ms")) if row is not None and row.get("status") == "ok" else None


def _cell(row: dict | None) -> str:
    if row is None:
        return "–"
    return f"{ms_per_frame(row):.3f}" if _ms(row) is not None else row.get("status", "–")


def provenance(rows: list[dict], what: str) -> str:
    """One line under a table: where and when its rows were measured."""
    r = rows[0]
    commits = sorted({x.get("commit", "")[:10] or "unknown" for x in rows})
    dirty = {x.get("git_dirty", "") for x in rows}
    state = "clean tree" if dirty == {"false"} else "tree with uncommitted changes" if "true" in dirty \
        else "tree state not recorded"
    bits = [r.get("device_name", "?")]
    if r.get("driver"):
        bits.append(f"driver {r['driver']}")
    bits.append(f"torch {r.get('torch', '?')}")
    if r.get("cuda"):
        bits += [f"CUDA {r['cuda']}", f"cuDNN {r.get('cudnn', '?')}"]
    return (f"_{what}: {' · '.join(bits)} · commit {', '.join(commits)} ({state}) · "
            f"{r.get('timestamp', '')[:10]} · run `{r.get('run_id', '?')}`._")


def _no_rows(path: str, command: str) -> str:
    return f"_No rows in `{path}` yet: `{command}` measures them._\n"


def _cuda_rows(results: Path, kind: str) -> list[dict]:
    return [r for r in read_rows(results, kind) if r.get("device") == "cuda"]


def _cuda_run(results: Path, kind: str) -> list[dict]:
    return latest_run(_cuda_rows(results, kind))


def _no_complete_run(rows: list[dict]) -> str:
    """The e2e blocks' sentence when rows exist but no run is complete (`e2e_runs.is_complete`)."""
    return (f"_No complete run in `benchmarks/results/e2e.csv` yet ({len(by_run(rows))} partial): a complete "
            f"run times {', '.join(COMPLETE_PROVIDERS)} at each of {', '.join(COMPLETE_SIZES)}; "
            "`bash dev/device/bench_e2e.sh` measures one._\n")


def _compile_rows(cells: dict[str, dict], precision: str) -> list[dict]:
    return [r for name, r in cells.items() if name.startswith("compile") and r.get("dtype") == precision]


def best_compile(cells: dict[str, dict], precision: str) -> dict | None:
    timed = [r for r in _compile_rows(cells, precision) if _ms(r) is not None]
    return min(timed, key=ms_per_frame, default=None)


def _eager_cell(cells: dict[str, dict], provider: str) -> str:
    """An eager column: the faster of its channels_last and NCHW rows, NCHW named when it won."""
    layouts = [cells.get(provider)]
    if provider != "eager-fp32":
        layouts.append(cells.get(provider.replace("eager-", "eager-nchw-")))
    timed = [r for r in layouts if r is not None and _ms(r) is not None]
    if not timed:
        return _cell(cells.get(provider))
    best = min(timed, key=ms_per_frame)
    return _cell(best) + (" (NCHW)" if "nchw" in best["provider"] else "")


def e2e_table(rows: list[dict]) -> str:
    """Sizes × providers, ms per frame: eager, the best compile per precision (its mode named),
    fused, and each fused precision over the best compile of the same precision."""
    by_size: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_size.setdefault(r["size"], {})[r["provider"]] = r
    precisions = [p for p in ("bf16", "fp16") if any(_compile_rows(c, p) for c in by_size.values())]
    eager = [p for p in E2E_COLUMNS if any(p in c for c in by_size.values())]
    fused = [f for f in FUSED if any(f in c for c in by_size.values())]
    header = ["size", *eager, *(f"best compile {p}" for p in precisions), *fused,
              *(f"{f} × compile-{f[-4:]}" for f in fused)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for size, cells in by_size.items():
        out = [size, *(_eager_cell(cells, p) for p in eager)]
        for p in precisions:
            best = best_compile(cells, p)
            out.append(f"{ms_per_frame(best):.3f} ({compile_mode(best)})" if best else "–")
        out += [_cell(cells.get(f)) for f in fused]
        for f in fused:
            best, row = best_compile(cells, f[-4:]), cells.get(f)
            ok = best is not None and row is not None and _ms(row) is not None
            out.append(f"{ms_per_frame(best) / ms_per_frame(row):.2f}" if ok else "–")
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def e2e_summary(results: Path) -> str:
    """The latest complete CUDA end-to-end run (`e2e_runs.latest_complete_run`: every default
    size with eager fp32 and both fused precisions) as `e2e_table`, with where, how many reps,
    which compile modes were measured and whether cuDNN's autotuner was on. A newer partial run
    does not replace it; `e2e_best_compile` is where such a run's compile rows count."""
    every = _cuda_rows(results, "e2e")
    if not every:
        return _no_rows("benchmarks/results/e2e.csv", "styleforge bench --e2e")
    rows = latest_complete_run(every)
    if not rows:
        return _no_complete_run(every)
    ran = [r for r in rows if r.get("status") == "ok"]
    modes = sorted({compile_mode(r) for r in ran if r["provider"].startswith("compile")})
    autotuner = sorted({r.get("cudnn_benchmark", "") or "?" for r in ran})
    reps = sorted({r.get("reps", "") for r in rows if r.get("status") == "ok"})
    return (e2e_table(rows) + "\n" + provenance(rows, "Measured") + f" Median of {', '.join(reps)} reps, "
            f"batch {rows[0].get('batch', '?')}; compile modes measured: {', '.join(modes) or 'none'}; "
            f"cudnn.benchmark: {', '.join(autotuner)}.\n")


def _best_compile_pairs(results: Path) -> tuple[list[dict], list]:
    """The complete run `e2e_summary` shows and the best-compile pairs measured against it."""
    every = _cuda_rows(results, "e2e")
    reference = latest_complete_run(every)
    return reference, best_compile_pairs(every, reference)


def e2e_best_compile(results: Path) -> str:
    """Per size of the complete run and per precision: the fastest torch.compile row of any
    clean-tree run on that run's GPU and torch, the fused row of the same precision from that
    same run, and their ratio; each line names its run and commit (a ratio never spans runs)."""
    every = _cuda_rows(results, "e2e")
    if not every:
        return _no_rows("benchmarks/results/e2e.csv", "styleforge bench --e2e")
    reference, pairs = _best_compile_pairs(results)
    if not reference:
        return _no_complete_run(every)
    lines = ["| size | precision | best compile (any run) | its ms/frame | fused, same run | fused × compile | "
             "modes measured at this size | run | commit |", "|---|---|---|---:|---:|---:|---|---|---|"]
    for p in pairs:
        c = p.compile
        ratio = "–" if p.ratio is None else f"{p.ratio:.2f}"
        lines.append(f"| {p.size} | {p.precision} | {compile_mode(c)} | {ms_per_frame(c):.3f} | {_cell(p.fused)} | "
                     f"{ratio} | {', '.join(p.modes_measured)} | `{c['run_id']}` | {c.get('commit', '')[:10] or '?'} |")
    cited = {p.compile["run_id"] for p in pairs}
    runs = by_run([r for r in every if r["run_id"] in cited])
    where = "\n".join(provenance(rows, "Measured") for rows in runs.values())
    return ("\n".join(lines) + f"\n\n_Searched: every run in `benchmarks/results/e2e.csv` on "
            f"{reference[0].get('device_name', '?')} with torch {reference[0].get('torch', '?')}, clean tree only; "
            "ms per frame, median; each ratio is two medians of one run._\n\n" + where + "\n")


def _detail_runs(results: Path) -> list[list[dict]]:
    """The runs `e2e-detail` lists: the complete run, every newer run (partial ones too, so their
    rows and failures stay visible) and every run `e2e_best_compile` cites; oldest first."""
    every = _cuda_rows(results, "e2e")
    reference, pairs = _best_compile_pairs(results)
    if not reference:
        return [latest_run(every)] if every else []
    keep = {p.compile["run_id"] for p in pairs} | {r["run_id"] for r in every if r["run_id"] >= reference[0]["run_id"]}
    return [rows for run_id, rows in by_run(every).items() if run_id in keep]


def e2e_detail(results: Path) -> str:
    """Every row of each run `_detail_runs` picks: each compile mode, its gate and its setup time."""
    runs = _detail_runs(results)
    if not runs:
        return _no_rows("benchmarks/results/e2e.csv", "styleforge bench --e2e")
    return "\n".join(_detail_table(rows) for rows in runs)


def _detail_table(rows: list[dict]) -> str:
    lines = ["| size | provider | ms/frame (p20–p80) | PSNR dB vs fp32 | setup s | status |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        notes = json.loads(r["notes"]) if r.get("notes") else {}
        spread = (f"{ms_per_frame(r):.3f} ({float(r['p20_ms']):.3f}–{float(r['p80_ms']):.3f})"
                  if _ms(r) is not None else "–")
        psnr = as_float(r.get("psnr_db"))
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r.get('error', '')}"
        lines.append(f"| {r['size']} | {r['provider']} | {spread} | "
                     f"{'–' if psnr is None else '∞' if psnr == float('inf') else f'{psnr:.1f}'} | "
                     f"{notes.get('setup_s', '–')} | {status.replace('|', '/')} |")
    return "\n".join(lines) + "\n\n" + provenance(rows, "Measured") + "\n"


def _same_precision(row: dict) -> bool:
    """False for rows that compute in another precision than their dtype column says (fp32 inputs
    run as bf16 operands, fp32 with TF32): they have no fp32 baseline of their own precision."""
    notes = row.get("notes", "")
    return row["provider"] != "styleforge.tf32" and "bf16-rounded" not in notes


def ops_summary(results: Path, prefix: str = "") -> str:
    """Per op case (those whose op name starts with `prefix`): StyleForge's median against the
    fastest baseline of the same precision."""
    rows = _cuda_run(results, "op")
    if not rows:
        return _no_rows("benchmarks/results/ops.csv", "styleforge bench --ops")
    cases: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in rows:
        if _ms(r) is not None and _same_precision(r) and r["op"].startswith(prefix):
            cases.setdefault((r["op"], r["shape"], r["dtype"]), {})[r["provider"]] = r
    lines = ["| op | shape | dtype | StyleForge ms | fastest baseline | its ms | × baseline |",
             "|---|---|---|---:|---|---:|---:|"]
    for (op, shape, dtype), cells in cases.items():
        ours = cells.get("styleforge")
        others = [r for name, r in cells.items() if name != "styleforge"]
        if ours is None or not others:
            continue
        base = min(others, key=_ms)
        lines.append(f"| {op} | {shape} | {dtype} | {_ms(ours):.4f} | {base['provider']} | {_ms(base):.4f} | "
                     f"{_ms(base) / _ms(ours):.2f} |")
    where = provenance(rows, "Measured (L2 flushed between reps where the data fits in it)")
    return "\n".join(lines) + "\n\n" + where + "\n"


def pipeline_summary(results: Path) -> str:
    """Per case: items/s through the pipeline, the engine alone and the plain decode+encode floor."""
    rows = _cuda_run(results, "pipeline")
    if not rows:
        return _no_rows("benchmarks/results/pipeline.csv", "styleforge bench --pipeline")
    cases: dict[str, dict[str, dict]] = {}
    for r in rows:
        cases.setdefault(r["op"], {})[r["provider"]] = r
    lines = ["| case | items | pipeline /s | engine alone /s | plain decode + encode /s | pipeline ÷ slower | "
             "outputs checked |", "|---|---:|---:|---:|---:|---:|---|"]
    for case, cells in cases.items():
        pipe = cells.get("pipeline")
        if pipe is None:
            continue
        notes = json.loads(pipe["notes"]) if pipe.get("notes") else {}

        def fps(name: str) -> str:
            r = cells.get(name)
            return "–" if r is None else f"{float(r['fps']):.1f}" if r.get("status") == "ok" else r["status"]
        ratio = notes.get("ratio_vs_slower")
        check = notes.get("check", {})
        checked = (f"{check.get('count', '?')} files, sizes equal, PSNR ≥ {check['min_psnr_db']:.1f} dB "
                   f"vs the engine" if check else "–")
        lines.append(f"| {case} | {pipe.get('reps', '?')} | {fps('pipeline')} | {fps('engine')} | {fps('floor')} | "
                     f"{'–' if ratio is None else f'{ratio:.2f}'} | {checked} |")
    runs = sorted({str(json.loads(r['notes']).get('runs', '?')) for r in rows if r.get("notes")})
    return ("\n".join(lines) + "\n\n" + provenance(rows, "Measured")
            + f" Each rate is the median of {', '.join(runs)} runs.\n")


def scaling_summary(results: Path) -> str:
    """`--gpus`: images/s of one folder over 1, 2, … GPUs and through one process, the ratio to
    the first row, the warm-up each run paid before its rate counts, same bytes."""
    rows = _cuda_run(results, "scaling")
    if not rows:
        return _no_rows("benchmarks/results/scaling.csv", "bash dev/device/gpus_x2.sh")
    lines = ["| GPUs | images | images/s (engines ready) | images/s (middle 80 %) | × first row | "
             "images/s (wall, with start-up) | warm-up s | same bytes |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]

    def order(r: dict) -> tuple:
        notes = json.loads(r["notes"])
        return bool(notes.get("one_process")), notes.get("devices", 0)
    for r in sorted(rows, key=order):
        notes = json.loads(r["notes"])
        gpus = f"{notes.get('devices', '?')}" + (", one process" if notes.get("one_process") else "")
        middle, warm = notes.get("middle_fps"), notes.get("warm_s")
        lines.append(f"| {gpus} | {r.get('reps', '?')} | {float(r['fps']):.1f} | "
                     f"{'-' if middle is None else f'{middle:.1f}'} | {notes.get('ratio_vs_first', 0):.2f} | "
                     f"{notes.get('wall_fps', 0):.1f} | {'-' if warm is None else f'{warm:.1f}'} | "
                     f"{'yes' if notes.get('bytes_identical') else 'NO'} |")
    return "\n".join(lines) + "\n\n" + provenance(rows, "Measured") + "\n"


HISTORY_SIZES = ("256", "512", "1080p", "4k")


def e2e_history(results: Path) -> str:
    """Every CUDA end-to-end run in the rows, oldest first: its commit and fused-bf16's ms per frame
    at each size (eager fp32 at 512 beside it, the same baseline in every run)."""
    runs: dict[str, list[dict]] = {}
    for r in read_rows(results, "e2e"):
        if r.get("device") == "cuda":
            runs.setdefault(r["run_id"], []).append(r)
    if not runs:
        return _no_rows("benchmarks/results/e2e.csv", "styleforge bench --e2e")
    lines = ["| date | commit | torch | " + " | ".join(f"fused-bf16 {s}" for s in HISTORY_SIZES)
             + " | eager-fp32 512 |", "|---|---|---|" + "---:|" * (len(HISTORY_SIZES) + 1)]
    for run_id, rows in sorted(runs.items()):
        cells = {(r["provider"], r["size"]): r for r in rows}
        first = rows[0]
        dirty = {r.get("git_dirty", "") for r in rows}
        commit = (first.get("commit", "")[:10] or "unknown") + (" (uncommitted changes)" if "true" in dirty else "")
        times = [_cell(cells.get(("fused-bf16", s))) for s in (*HISTORY_SIZES,)]
        lines.append(f"| {first.get('timestamp', run_id)[:10]} | {commit} | {first.get('torch', '?')} | "
                     + " | ".join(times) + f" | {_cell(cells.get(('eager-fp32', '512')))} |")
    devices = sorted({r.get("device_name", "?") for rows in runs.values() for r in rows})
    return ("\n".join(lines) + f"\n\n_{len(runs)} runs of `styleforge bench --e2e` in "
            f"`benchmarks/results/e2e.csv` ({', '.join(devices)}); ms per frame, median of each run._\n")


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def tiling_summary(results: Path) -> str:
    """The latest run of `python -m styleforge.bench.tiling` (the rows sharing the last row's commit,
    device, precision and budget): per size and mode, seconds per call, peak GPU memory and PSNR of
    the tiled output against the untiled one."""
    rows = _json_lines(results / "tiling.jsonl")
    if not rows:
        return _no_rows("benchmarks/results/tiling.jsonl", "python -m styleforge.bench.tiling")
    key = ("commit", "gpu", "torch", "precision", "budget_gib")
    last = {k: rows[-1].get(k) for k in key}
    rows = [r for r in rows if all(r.get(k) == v for k, v in last.items())]
    latest = {(r["size"], r["tiling"]): r for r in rows}
    lines = ["| size | mode | s per call | peak allocated / reserved GiB | PSNR vs untiled dB |",
             "|---|---|---:|---|---:|"]
    for r in latest.values():
        if r.get("status") == "failed":
            lines.append(f"| {r['size']} | {r['tiling']} | failed: {r.get('error', '')[:80].replace('|', '/')}"
                         " | – | – |")
            continue
        peak = (f"{r['peak_allocated_gib']:.2f} / {r['peak_reserved_gib']:.2f}"
                if "peak_allocated_gib" in r else "– (CPU)")
        db = r.get("psnr_vs_untiled_db")
        lines.append(f"| {r['size']} | {r['mode']} | {r['median_s']:.3f} | {peak} | "
                     f"{'–' if db is None else '∞' if db == float('inf') else f'{db:.1f}'} |")
    budget = last["budget_gib"]
    return ("\n".join(lines) + f"\n\n_Measured: {last['gpu']} · torch {last['torch']}"
            f" · commit {last['commit'] or 'unknown'}"
            f" · {rows[-1].get('timestamp', 'date not recorded')[:10]} · {last['precision']}, `--stroke-scale 1`"
            + (f", GPU budget {budget:.1f} GiB" if budget else "") + " · `benchmarks/results/tiling.jsonl`._\n")


STROKE_BAR = 1.5


def stroke_summary(results: Path) -> str:
    """`dev/tiling/stroke_table.py`'s output: each built-in style's style ratio at 512 px and at the
    larger sizes with the default stroke scale, and the 4K / 512 ratio against the bar."""
    path = results / "stroke_scale.json"
    if not path.exists():
        return _no_rows("benchmarks/results/stroke_scale.json", "python dev/tiling/stroke_table.py")
    data = json.loads(path.read_text())
    scores: dict[str, dict[str, float]] = data["style_ratio"]
    sizes = list(next(iter(scores.values())))
    lines = ["| style | " + " | ".join(f"{s} px" if s.isdigit() else s for s in sizes)
             + f" | 4K / 512 | bar (≤ {STROKE_BAR}×) |", "|---|" + "---:|" * (len(sizes) + 1) + "---|"]
    for style, cells in scores.items():
        ratio = cells["4K"] / cells["512"] if {"4K", "512"} <= cells.keys() else None
        lines.append(f"| {style} | " + " | ".join(f"{cells[s]:.3f}" for s in sizes)
                     + (f" | {ratio:.2f}× | {'met' if ratio <= STROKE_BAR else 'not met'} |" if ratio
                        else " | – | – |"))
    env = data["environment"]
    return ("\n".join(lines) + f"\n\n_Measured: {env['device_name']} · torch {env['torch']} · "
            f"commit {env['commit'][:10]} · precision {data['precision']} · photos {', '.join(data['photos'])}"
            " · `benchmarks/results/stroke_scale.json`._\n")


def _notes(row: dict) -> dict:
    return json.loads(row["notes"]) if row.get("notes") else {}


def _cpu_run(results: Path, op: str) -> list[dict]:
    return latest_run([r for r in read_rows(results, "cpu") if r.get("op") == op])


def _cpu_provenance(rows: list[dict]) -> str:
    """Where CPU rows were measured: the CPU, the ISA oneDNN and OpenVINO report, the threads and
    the load average over the rows (the machine may be shared: wall times grow with it)."""
    notes = [_notes(r) for r in rows]
    loads = [float(n["load_avg"]) for n in notes if n.get("load_avg")]
    isa = next((n["onednn"] for n in notes if n.get("onednn")), "")
    ov = next((n["openvino"] for n in notes if n.get("openvino")), "")
    cap = next((n["max_cpu_isa"] for n in notes if n.get("max_cpu_isa")), "")
    bits = [f"oneDNN ISA {isa}" if isa else "", f"ONEDNN_MAX_CPU_ISA={cap}" if cap else "",
            f"OpenVINO: {ov}" if ov else "", f"{notes[0].get('threads', '?')} threads",
            f"load average {min(loads):.1f}–{max(loads):.1f}" if loads else ""]
    return provenance(rows, "Measured") + " " + " · ".join(b for b in bits if b) + ".\n"


def _num(value, digits: int = 0) -> str:
    return "–" if value in (None, "") else f"{float(value):.{digits}f}"


def _cpu_setting(row: dict) -> tuple[str, str]:
    """The machine and the oneDNN cap a CPU row ran under: one table per setting."""
    return row.get("device_name", ""), _notes(row).get("max_cpu_isa", "")


def cpu_summary(results: Path) -> str:
    """The latest `styleforge bench --cpu` run of each setting (machine and ONEDNN_MAX_CPU_ISA), in
    the order they were last run: per path and size, wall ms (median, min), the process's CPU ms
    per call, PSNR against PyTorch fp32 and the style ratio."""
    everything = [r for r in read_rows(results, "cpu") if r.get("op") == "stylize"]
    if not everything:
        return _no_rows("benchmarks/results/cpu.csv", "styleforge bench --cpu")
    settings = dict.fromkeys(_cpu_setting(r) for r in reversed(everything))   # newest first
    blocks = [_cpu_block(latest_run([r for r in everything if _cpu_setting(r) == setting]))
              for setting in reversed(settings)]
    return "\n".join(blocks)


def _cpu_block(rows: list[dict]) -> str:
    lines = ["| path | px | wall ms (median) | wall ms (min) | CPU ms per call | PSNR vs fp32 dB | "
             "style ratio |", "|---|---:|---:|---:|---:|---:|---:|"]
    missing: dict[str, list[str]] = {}     # why → providers: one line, not a row each
    for r in rows:
        n = _notes(r)
        if r.get("status") != "ok":
            why = f"{r.get('status')}: {r.get('error', '')[:70].replace('|', '/')}"
            names = missing.setdefault(why, [])
            if r["provider"] not in names:
                names.append(r["provider"])
            continue
        lines.append(f"| {r['provider']} | {r['size']} | {_num(r['median_ms'])} | {_num(n.get('min_ms'))} | "
                     f"{_num(n.get('cpu_ms_median'))} | {r['psnr_db'] or '–'} | {n.get('style_ratio', '–')} |")
    gaps = "".join(f"\nNot in this run ({why}): {', '.join(names)}.\n" for why, names in missing.items())
    return "\n".join(lines) + "\n" + gaps + "\n" + _cpu_provenance(rows)


def cpu_arbitrary_summary(results: Path) -> str:
    """The latest `python -m styleforge.bench.cpu_arbitrary` run: per variant, time for a 512-px
    photo and the four quality measures (medians over the photo × painting pairs)."""
    rows = _cpu_run(results, "stylize-arbitrary")
    if not rows:
        return _no_rows("benchmarks/results/cpu.csv", "python -m styleforge.bench.cpu_arbitrary")
    lines = ["| variant | passes | internal px | wall ms (min) | CPU ms per call | style ratio | content dist | "
             "palette dist | grid score |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = _notes(r)
        lines.append(f"| {r['provider'].removeprefix('ours-arbitrary-')} | {n.get('passes')} | {n.get('internal')} | "
                     f"{_num(n.get('min_ms'))} | {_num(n.get('cpu_ms_median'))} | {n.get('style_ratio')} | "
                     f"{n.get('content_dist')} | {n.get('palette_dist')} | {n.get('grid_score')} |")
    pairs = _notes(rows[0]).get("pairs", "?")
    return "\n".join(lines) + f"\n\n_{pairs} photo × painting pairs per variant._ " + _cpu_provenance(rows)


# A kernel's page shows the ops table of its own op cases (`op` names start with the key).
OP_PAGES = ("attention", "conv3x3", "conv9x9", "ffn", "instance_norm")

TABLES: dict[str, Callable[[Path], str]] = {
    "e2e": e2e_summary, "e2e-best-compile": e2e_best_compile, "e2e-detail": e2e_detail, "e2e-history": e2e_history,
    "ops": ops_summary,
    "pipeline": pipeline_summary, "scaling": scaling_summary, "tiling": tiling_summary, "stroke-scale": stroke_summary,
    "cpu": cpu_summary, "cpu-arbitrary": cpu_arbitrary_summary, "arbitrary-quality": arbitrary_quality_summary,
    "arbitrary-speed": arbitrary_speed_summary, "temporal": temporal_summary,
    **{f"ops-{op}": functools.partial(ops_summary, prefix=op) for op in OP_PAGES}}


def documents(root: Path = REPO_ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def render(text: str, results: Path) -> str:
    """`text` with every table block replaced by what its rows give; unknown names are an error."""
    def block(match: re.Match) -> str:
        name = match["name"]
        if name not in TABLES:
            raise ValueError(f"unknown table {name!r} (known: {', '.join(TABLES)})")
        return match.group(1) + TABLES[name](results) + match.group(4)
    return MARKER.sub(block, text)


def stale(root: Path = REPO_ROOT, results: Path | None = None) -> list[str]:
    """'file: table NAME' for each block that differs from its rows."""
    results = results or root / DEFAULT_OUTPUT
    out = []
    for path in documents(root):
        text = path.read_text()
        for old, new in zip(MARKER.finditer(text), MARKER.finditer(render(text, results)), strict=True):
            if old.group(0) != new.group(0):
                out.append(f"{path.relative_to(root)}: table {old['name']}")
    return out


def regenerate(root: Path = REPO_ROOT, results: Path | None = None) -> list[Path]:
    """Rewrite every block in README.md and docs/; returns the files that changed."""
    results = results or root / DEFAULT_OUTPUT
    changed = []
    for path in documents(root):
        text = path.read_text()
        new = render(text, results)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m styleforge.bench.tables", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is stale")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the repository (default: this checkout)")
    parser.add_argument("--results", type=Path, default=None,
                        help="the rows (default: ROOT/benchmarks/results)")
    parser.add_argument("--print", action="store_true", dest="show",
                        help="print every table from the rows instead of rewriting files")
    args = parser.parse_args(argv)
    if args.show:
        for name, table in TABLES.items():
            print(f"<!-- table:{name} -->\n{table(args.results or args.root / DEFAULT_OUTPUT)}<!-- /table:{name} -->\n")
        return 0
    if args.check:
        bad = stale(args.root, args.results)
        for line in bad:
            print(f"stale: {line} (python -m styleforge.bench.tables regenerates it)")
        return 1 if bad else 0
    for path in regenerate(args.root, args.results):
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
