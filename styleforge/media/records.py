"""Per-item records: what happened to one image or one video, as the pipeline reports it.

A `Record` is the unit of `--json` output (one JSON object per line) and of the CLI's counts
and messages. It holds no pixels. Not here: how items are processed (`media.pipeline`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass
class Record:
    index: int                       # position in the input order
    input: str                       # a path, "-" for stdin, or "frame N" for video frames
    output: str | None = None        # the path written, "-" for stdout; None when nothing was
    width: int | None = None         # the size stylized (after --max-side)
    height: int | None = None
    seconds: float = 0.0             # wall time from decode start to output written
    error: str | None = None         # one line naming the input and the reason
    notes: list[str] = field(default_factory=list)  # warnings that did not stop the item
    skipped: bool = False            # the output existed and was kept

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> str:
        record = asdict(self)
        record["size"] = [self.width, self.height] if self.width is not None else None
        for key in ("index", "width", "height"):
            record.pop(key)
        record["seconds"] = round(self.seconds, 6)
        return json.dumps(record, ensure_ascii=False)
