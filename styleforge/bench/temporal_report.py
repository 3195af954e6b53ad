"""The temporal-consistency benchmark's rows as text: a log line per row, the Markdown table, the
issue's bars each row meets or misses, and the rows appended to `OUTPUT/temporal.jsonl` with the
environment. Measures nothing: the rows come from `bench/temporal.py`.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from .temporal_options import TemporalBenchConfig

BARS = {"warp": 0.6, "style": 0.10, "speed": 0.7}   # issue 40: ≤ 0.6× warping error, style ±10 %, ≥ 0.7× frames/s


def verdict(row: dict) -> str:
    """The issue's bars this row meets (✓) or misses (✗): warping error, style, speed."""
    if "temporal" not in row["method"] or "absent" in row:
        return ""
    marks = []
    if row.get("warp_vs_per_frame") is not None:
        marks.append(("warp", row["warp_vs_per_frame"] <= BARS["warp"]))
    if row.get("style_change") is not None:
        marks.append(("style", abs(row["style_change"]) <= BARS["style"]))
    if row.get("fps_ratio") is not None:
        marks.append(("speed", row["fps_ratio"] >= BARS["speed"]))
    return " ".join(f"{name} {'ok' if good else 'MISS'}" for name, good in marks)


def line(row: dict) -> str:
    if "absent" in row:
        return f"{row['clip']:22s} {row['method']:20s} {row['absent']}"
    text = f"{row['clip']:22s} {row['method']:20s}"
    if "warp_error" in row:
        text += f" warp {row['warp_error']:.5f} ({row['warp_vs_per_frame']:.2f}x)"
    if row.get("style_ratio") is not None:
        text += f" style {row['style_ratio']:.3f} ({row['style_change']:+.1%})"
    if row.get("fps_plain") is not None:
        text += f" fps plain {row['fps_plain']:.1f} temporal {row['fps_temporal']:.1f} ({row['fps_ratio']:.2f}x)"
    return text


def save_rows(rows: list[dict], config: TemporalBenchConfig) -> Path:
    from .env import capture_environment
    from .results import new_run_id
    path = Path(config.output) / "temporal.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    env = capture_environment(config.device)
    run_id = new_run_id()
    with path.open("a") as f:
        for row in rows:
            f.write(json.dumps({"run_id": run_id, **row, "config": asdict(config), "env": env}) + "\n")
    return path


def markdown(rows: list[dict]) -> str:
    def f(v, fmt):
        return "–" if v is None else format(v, fmt)
    lines = ["| clip | method | warping error | × per-frame | style ratio | style change | "
             "video frames/s plain | --temporal | × plain | bars (issue 40) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "absent" in r:
            lines.append(f"| {r['clip']} | {r['method']} | {r['absent']} | | | | | | | |")
            continue
        lines.append(f"| {r['clip']} | {r['method']} | {f(r.get('warp_error'), '.5f')} | "
                     f"{f(r.get('warp_vs_per_frame'), '.3f')} | {f(r.get('style_ratio'), '.3f')} | "
                     f"{f(r.get('style_change'), '+.1%')} | {f(r.get('fps_plain'), '.1f')} | "
                     f"{f(r.get('fps_temporal'), '.1f')} | {f(r.get('fps_ratio'), '.2f')} | {verdict(r)} |")
    return "\n".join(lines)
