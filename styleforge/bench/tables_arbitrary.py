"""The arbitrary model's frame-time table from `arbitrary.csv` (`python -m styleforge.bench.arbitrary`).

Per case (the engine's whole frame at the default stroke scale, or the model alone on the whole
frame) and size: the median ms of each provider, and ours against the stronger compile baseline
(`compile-sdpa-bf16`, the model as a PyTorch user would write it). A provider with no row there
failed the bench's precision gate against eager fp32 (the bench prints why) or was not run. Kept
apart from `tables.py` (one formatter per table there, over 400 lines).
"""
from __future__ import annotations

import csv
from pathlib import Path

PROVIDERS = ("eager-fp32", "eager-bf16", "compile-bf16", "compile-sdpa-bf16", "ours-bf16")
CASES = {"arbitrary-stroke-auto": "whole frame, default stroke scale", "arbitrary": "model alone, native size"}
SIZES = {"1x3x1080x1920": "1080p", "1x3x2160x3840": "4K"}


def arbitrary_speed_summary(results: Path) -> str:
    path = results / "arbitrary.csv"
    rows = list(csv.DictReader(path.open())) if path.is_file() else []
    if not rows:
        from .tables import _no_rows  # here, not at the top: tables imports this module
        return _no_rows("benchmarks/results/arbitrary.csv", "python -m styleforge.bench.arbitrary")
    cells = {(r["model"], r["shape"], r["provider"]): float(r["median_ms"]) for r in rows}
    lines = ["| case | size | " + " | ".join(PROVIDERS) + " | ours ÷ compile-sdpa |",
             "|---|---|" + "---:|" * (len(PROVIDERS) + 1)]
    for model, label in CASES.items():
        for shape, size in SIZES.items():
            got = [cells.get((model, shape, p)) for p in PROVIDERS]
            if not any(got):
                continue
            ours, sdpa = cells.get((model, shape, "ours-bf16")), cells.get((model, shape, "compile-sdpa-bf16"))
            ratio = f"{ours / sdpa:.2f}" if ours and sdpa else "–"
            lines.append(f"| {label} | {size} | " + " | ".join(f"{v:.2f}" if v else "–" for v in got)
                         + f" | {ratio} |")
    commits = ", ".join(sorted({r["commit"] for r in rows}))
    gpus = ", ".join(sorted({r["gpu"] for r in rows}))
    torches = ", ".join(sorted({r["torch"] for r in rows}))
    return ("\n".join(lines) + "\n\n_ms per frame, median; bf16 rows gated against eager fp32 (– : no row, "
            f"the gate failed or the case was not run). Measured: {gpus} · torch {torches} · commit "
            f"{commits}._\n")
