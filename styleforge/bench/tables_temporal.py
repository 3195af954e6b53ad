"""The temporal-consistency table from `temporal.jsonl` (`styleforge bench --temporal`).

Shows the newest run of the bench itself on a GPU that timed the video path (rows of
`dev/eval_warp_styles.py` carry a `tool` key and are left out; so are CPU runs) and the newest
that measured a stability-trained style, if another, every row of each in the bench's own table
format (`temporal_report.markdown`), with the run's device, versions and commit under it. Kept
apart from `tables.py` (one formatter per table there, over 400 lines).
"""
from __future__ import annotations

import json
from pathlib import Path

from .temporal_report import markdown

FILE = "temporal.jsonl"


def bench_runs(path: Path) -> dict[str, list[dict]]:
    """run_id → the bench's GPU rows of that run, runs in file order."""
    runs: dict[str, list[dict]] = {}
    for text in path.read_text().splitlines() if path.is_file() else ():
        row = json.loads(text) if text.strip() else None
        if row and "tool" not in row and row.get("env", {}).get("device") == "cuda":
            runs.setdefault(row["run_id"], []).append(row)
    return runs


def _block(run_id: str, rows: list[dict]) -> str:
    env, config = rows[0]["env"], rows[0].get("config", {})
    state = "clean tree" if env.get("git_dirty") == "false" else "tree with uncommitted changes"
    where = (f"_Measured: {env.get('device_name', '?')} · driver {env.get('driver', '?')} · torch "
             f"{env.get('torch', '?')} · CUDA {env.get('cuda', '?')} · commit {env.get('commit', '?')[:10]} "
             f"({state}) · run `{run_id}` · style `{config.get('style', '?')}`"
             + (f" against `{config['stability_checkpoint']}`" if config.get("stability_checkpoint") else "")
             + f", strength {config.get('strength', '?')}, detail σ {config.get('detail_sigma', '?')}"
             + (", backward flow only" if config.get("flow_check") is False else "") + "._")
    return markdown(rows) + "\n\n" + where + "\n"


def temporal_summary(results: Path) -> str:
    """The newest run with frames/s (the bars' run) and, when a newer or older run is the newest
    with a measured stability-trained style, that run below it."""
    runs = bench_runs(Path(results) / FILE)
    if not runs:
        return (f"_No GPU rows in `benchmarks/results/{FILE}` yet: `styleforge bench --temporal "
                "--device cuda` measures them._\n")
    timed = [r for r, rows in runs.items() if any(x.get("fps_ratio") is not None for x in rows)]
    stable = [r for r, rows in runs.items()
              if any(x["method"] == "stability" and "absent" not in x for x in rows)]
    shown = list(dict.fromkeys([(timed or list(runs))[-1], *stable[-1:]]))
    return "\n".join(_block(r, runs[r]) for r in shown)
