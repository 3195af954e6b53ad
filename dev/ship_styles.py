"""Copy trained built-in style files into the package, adding how they were trained in total.

    python dev/ship_styles.py --from runs/v2 --styles starry_night,udnie \
        --train-log runs/warm/train_log.json --train-log out/c4/train_log.json ... \
        --note "chosen: ..." [--dest styleforge/styles]

A style trained over several device calls carries only its last call's `train_seconds` in its
metadata (dev/train_builtin.py writes one call's row). Given every call's `train_log.json` (in
order; rows of style, steps and seconds — one rebuilt from the workers' logs will do), this writes
`train_segments` (seconds and the step reached, per call) and `train_seconds_total` beside the
existing fields, plus an optional free-text `selection` note, and leaves the tensors untouched
(the int8 file as trained). A file warm-started from the one it replaces can instead `--append`:
the shipped file's `train_segments` stay and only the logs' rows past its step count are added,
each with `--segment-note` (what the call changed: loss, weights, machine), since the `training`
metadata describes the last call only. A plan's variant (its `variant` metadata) takes its own
rows of a plan's log, so rename the file to its style's name and pass the logs as they came.
A dev tool, not part of the package.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file


def segments(logs: list[Path], name: str, steps: int, variant: str = "") -> list[tuple[int, float]]:
    """(steps reached, seconds) per call, in the logs' order, up to the file's step count. A plan's
    log (dev/train_plan.py) has one row per variant, several of one style, each named: a file of
    `variant` takes only its own rows there, and the style's rows of the logs before plans."""
    out = []
    for log in logs:
        for row in json.loads(log.read_text()):
            named = row.get("name")
            own = not (variant and named) or named == variant
            # a plan's log writes its numbers as strings
            reached = int(row["steps"])
            # a call resumed past the variant's last step logs it again, untrained: count it once
            if row["style"] == name and own and reached <= steps and reached not in {n for n, _ in out}:
                out.append((reached, float(row["seconds"])))
    return out


def shipped_history(dest: Path) -> tuple[int, str, float]:
    """(steps, train_segments, train_seconds_total) of the file about to be replaced; a file trained
    in one call (v1: `train_seconds` and `steps`, no segments) is its own first segment."""
    with safe_open(str(dest), "pt") as f:
        meta = f.metadata() or {}
    if "train_segments" in meta:
        return int(meta["steps"]), meta["train_segments"], float(meta["train_seconds_total"])
    if "train_seconds" in meta and "steps" in meta:
        seconds = float(meta["train_seconds"])
        return int(meta["steps"]), f"{seconds:.0f} s to step {meta['steps']}", seconds
    raise ValueError(f"{dest} has no train_segments or train_seconds to append to")


def ship(src: Path, dest: Path, logs: list[Path], note: str, append: bool = False,
         segment_note: str = "") -> dict[str, str]:
    with safe_open(str(src), "pt") as f:
        meta = dict(f.metadata() or {})
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    steps = int(meta["steps"])
    parts = segments(logs, meta["style"], steps, meta.get("variant", ""))
    done, history, total = shipped_history(dest) if append else (0, "", 0.0)
    parts = [(n, s) for n, s in parts if n > done]
    if parts:
        suffix = f" ({segment_note})" if segment_note else ""
        meta["train_segments"] = " + ".join(([history] if history else [])
                                            + [f"{s:.0f} s to step {n}{suffix}" for n, s in parts])
        meta["train_seconds_total"] = f"{total + sum(s for _, s in parts):.0f}"
    if note:
        meta["selection"] = note
    save_file(tensors, str(dest), metadata=meta)
    return meta


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="src", required=True, type=Path)
    p.add_argument("--styles", required=True)
    p.add_argument("--dest", default=Path("styleforge/styles"), type=Path)
    p.add_argument("--train-log", action="append", default=[], type=Path)
    p.add_argument("--note", default="")
    p.add_argument("--append", action="store_true",
                   help="keep the replaced file's train_segments and add only the logs' later rows")
    p.add_argument("--segment-note", default="", help="said in brackets after each added segment")
    args = p.parse_args()
    for name in args.styles.split(","):
        meta = ship(args.src / f"{name}.safetensors", args.dest / f"{name}.safetensors",
                    args.train_log, args.note, args.append, args.segment_note)
        print(f"{name}: step {meta['steps']}, {meta.get('train_segments', 'one call')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
