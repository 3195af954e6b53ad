"""The --json file of a diag script: its folder made, the data written as indented JSON. Shared by
the scripts in dev/diag, which import it from their own folder (on sys.path when run as scripts);
never imported by the package.
"""
from __future__ import annotations

import json
from pathlib import Path


def write_json(path: str | Path | None, data, indent: int = 2) -> None:
    """data as JSON at path; nothing when path is empty (no --json given)."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=indent))
