"""The temporal-consistency table from `temporal.jsonl` (`styleforge bench --temporal`).

Shows the newest run of the bench itself on a GPU that timed the video path (rows of
`dev/eval_warp_styles.py` carry a `tool` key and are left out; so are CPU runs) and the newest
that measured a stability-trained style, if another, every row of each in the bench's own table
format (`temporal_report.markdown`), with the run's device, versions, commit and blend settings
under it. Kept apart from `tables.py` (one formatter per table there, over 400 lines).
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
             + _flows(config) + "._")
    return markdown(rows) + "\n\n" + where + "\n"


def _flows(config: dict) -> str:
    """The blend's flows as the run had them; rows before `unchecked_trust` was recorded lack it."""
    if config.get("flow_check") is not False:
        return ""
    trust = config.get("unchecked_trust")
    return ", backward flow only" + (f" (α × {trust:g})" if trust is not None else "")


def temporal_summary(results: Path) -> str:
    """The newest run with frames/s (the bars' run) and, when another run is the newest with a
    measured stability-trained style, that run below it."""
    runs = bench_runs(Path(results) / FILE)
    if not runs:
        return (f"_No GPU rows in `benchmarks/results/{FILE}` yet: `styleforge bench --temporal "
                "--device cuda` measures them._\n")
    timed = [r for r, rows in runs.items() if any(x.get("fps_ratio") is not None for x in rows)]
    stable = [r for r, rows in runs.items()
              if any(x["method"] == "stability" and "absent" not in x for x in rows)]
    head = (timed or list(runs))[-1]
    shown = list(dict.fromkeys([head, *stable[-1:]]))
    return "\n".join(_block(r, runs[r]) for r in shown)
