"""Charts drawn from the result rows (never from numbers typed anywhere else).

`throughput.png`: frames/s vs megapixels per frame, one line per provider, log-log, from the
run the README's e2e table shows (`e2e_runs.latest_complete_run`), or the latest run in
`e2e.csv` when none is complete (a CPU smoke run). `roofline.png`: the latest run in `ops.csv`
— left, op points at (FLOP/byte, TFLOP/s) under that same run's measured copy-bandwidth and
matmul roofs; right, achieved GB/s of every op case against the measured copy bandwidth
(memory-bound ops that declare no FLOPs only appear here). matplotlib is optional
(`pip install styleforge[plot]`) and runs on the Agg backend, so no display is needed.
"""
from __future__ import annotations

from pathlib import Path

from .e2e_runs import latest_complete_run
from .results import as_float, latest_run, read_rows


class PlotUnavailable(RuntimeError):
    """matplotlib is missing; the message says how to install it."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("plots need matplotlib: pip install 'styleforge[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _caption(rows: list[dict[str, str]]) -> str:
    r = rows[0]
    parts = [r.get("device_name", ""), f"torch {r.get('torch', '')}"]
    if r.get("cuda"):
        parts.append(f"CUDA {r['cuda']}")
    parts += [r.get("timestamp", "")[:10], f"commit {r.get('commit', '')[:10]}"]
    return " · ".join(p for p in parts if p.strip())


def plot_throughput(output_dir: Path, plt) -> Path | None:
    every = read_rows(output_dir, "e2e")
    rows = [r for r in latest_complete_run(every) or latest_run(every) if r["status"] == "ok"]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(10, 5.5))
    ticks = {}
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    # A run has up to ~14 providers: the default 10-colour cycle would give two lines one colour.
    colours = plt.get_cmap("tab20").colors
    for index, provider in enumerate(providers):
        points = []
        for r in rows:
            if r["provider"] != provider:
                continue
            _, _, h, w = (int(v) for v in r["shape"].split("x"))
            points.append((h * w / 1e6, float(r["fps"])))
            ticks[h * w / 1e6] = f"{r['size']}²" if r["size"].isdigit() else r["size"]
        points.sort()
        line, = ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=provider,
                        color=colours[index % len(colours)], linestyle="-" if index < len(colours) else "--")
        for x, y in points:
            ax.annotate(f"{y:.3g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7,
                        color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sorted(ticks), [ticks[k] for k in sorted(ticks)])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_xlabel("frame size (megapixels, log)")
    ax.set_ylabel(f"frames/s (log, batch {rows[0]['batch']})")
    ax.set_title(f"Style network throughput\n{_caption(rows)}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    path = output_dir / "throughput.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_roofline(output_dir: Path, plt) -> Path | None:
    rows = latest_run(read_rows(output_dir, "ceiling"))
    if not rows:
        return None
    run_id = rows[0]["run_id"]
    copy_gbps = next((as_float(r["gbps"]) for r in rows if r["op"] == "copy"), None)
    matmul = next((as_float(r["tflops"]) for r in rows if r["op"] == "matmul"), None)
    ops = [r for r in read_rows(output_dir, "op") if r["run_id"] == run_id and r["status"] == "ok"]
    fig, (roof, bw) = plt.subplots(1, 2, figsize=(14, max(5.0, 1.5 + 0.22 * len(ops))))
    if copy_gbps and matmul:
        ridge = matmul * 1e3 / copy_gbps
        spread = [as_float(r["intensity"]) for r in ops if as_float(r["intensity"])] + [ridge]
        xs = [min(spread) / 10, ridge, max(spread) * 10]
        roof.plot(xs, [min(matmul, x * copy_gbps / 1e3) for x in xs], color="black",
                  label=f"measured roofs: {copy_gbps:.4g} GB/s copy, {matmul:.4g} TFLOP/s matmul")
    placed = 0
    for r in ops:
        x, y = as_float(r["intensity"]), as_float(r["tflops"])
        if x and y:
            roof.scatter([x], [y], label=f"{r['op']} {r['provider']} {r['shape']} {r['dtype']}", s=25)
            placed += 1
    if not placed:
        roof.text(0.5, 0.5, "no op case of this run declares FLOPs\n(memory-bound ops: see the right panel)",
                  transform=roof.transAxes, ha="center", va="center", fontsize=9, color="gray")
    roof.set_xscale("log")
    roof.set_yscale("log")
    roof.set_xlabel("arithmetic intensity (FLOP / byte)")
    roof.set_ylabel("achieved TFLOP/s")
    roof.set_title("Roofline (op cases that declare FLOPs)", fontsize=10)
    roof.grid(True, which="both", alpha=0.3)
    roof.legend(fontsize=6)
    labelled = [(f"{r['op']} {r['shape']} {r['dtype']}\n{r['provider']}", as_float(r["gbps"]))
                for r in ops if as_float(r["gbps"])]
    bw.barh([name for name, _ in labelled], [v for _, v in labelled], color="tab:blue")
    if copy_gbps:
        bw.axvline(copy_gbps, color="black", linestyle="--", label=f"copy {copy_gbps:.4g} GB/s (measured)")
        bw.legend(fontsize=8)
    bw.tick_params(axis="y", labelsize=6)
    bw.invert_yaxis()
    bw.set_xlabel("achieved GB/s (fewest bytes / median time)")
    bw.set_title("Bandwidth of every op case", fontsize=10)
    fig.suptitle(_caption(rows), fontsize=10)
    path = output_dir / "roofline.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_results(output_dir: str | Path) -> list[Path]:
    """Draw every chart the rows allow; returns the PNG files written (may be empty)."""
    plt = _pyplot()
    output_dir = Path(output_dir)
    return [p for p in (plot_throughput(output_dir, plt), plot_roofline(output_dir, plt)) if p]
