"""Import a script of dev/diag as its own run does: with dev/diag (for json_out) on sys.path."""
from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path

DIAG = Path(__file__).resolve().parents[2] / "dev" / "diag"


@contextlib.contextmanager
def diag_module(name: str):
    """The module, with sys.path restored afterwards (the script's own inserts included)."""
    before = list(sys.path)
    sys.path.insert(0, str(DIAG))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path[:] = before
