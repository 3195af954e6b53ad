"""What `styleforge stylize` prints: one line per problem, a progress bar for several files,
the counts at the end, and with `--json` one record per item (`media.Record.to_json`).
Printing only: the records come from the library (`jobs.run_jobs`).
"""
from __future__ import annotations

import time


class _NoBar:
    """The progress bar's interface, doing nothing: one image needs no bar, and not importing rich
    for it keeps a one-photo run's start short."""

    def add_task(self, *args, **kwargs) -> int:
        return 0

    def update(self, *args, **kwargs) -> None:
        pass

    advance = update

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc) -> None:
        pass


class Report:
    """Counts and one-line messages; the bar (for several files) stays below the messages.

    With `json_to` set, every item also becomes one JSON line there (`media.Record.to_json`)."""

    def __init__(self, total: int, json_to=None):
        self.console = None
        self.progress = _NoBar()
        if total >= 2:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )
            self.console = Console(stderr=True, highlight=False, soft_wrap=True)
            self.progress = Progress(TextColumn("stylizing"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                                     console=self.console, transient=True)
        self.task = self.progress.add_task("stylize", total=total, rate="")
        self.done = self.skipped = self.failed = 0
        self.json_to = json_to
        self.start = time.perf_counter()

    def say(self, message: str, style: str = "") -> None:
        if self.console is None:
            import sys
            print(message, file=sys.stderr, flush=True)
            return
        from rich.text import Text
        self.console.print(Text(message, style=style))

    def error(self, message: str, source: str = "") -> None:
        from ..media.records import Record
        self.failed += 1
        self.say(f"error: {message}", "bold red")
        self.emit(Record(-1, source, error=message))

    def emit(self, record) -> None:
        if self.json_to is not None:
            self.json_to.write(record.to_json() + "\n")
            self.json_to.flush()

    def settled(self, record) -> None:
        """A record the plan settled before any work (a refused input, an output that exists):
        counted and said, not on the bar."""
        if record.skipped:
            self.skipped += 1
            self.say(f"skipped {record.input}: {record.notes[0] if record.notes else 'output exists'}", "yellow")
        else:
            for note in record.notes:
                self.say(f"note: {note}", "yellow")
            if record.error is not None:
                self.failed += 1
                self.say(f"error: {record.error}", "bold red")
            else:
                self.done += 1
        self.emit(record)

    def item(self, record) -> None:
        """One finished item from the pipeline (skipped: another run wrote or holds its output
        since the plan was made): count it, say what went wrong, advance the bar."""
        self.settled(record)
        self.progress.advance(self.task)
        if not record.skipped:
            finished = self.done + self.failed
            self.progress.update(self.task, rate=f"{finished / (time.perf_counter() - self.start):.1f} images/s")

    def summary(self, planned: int | None = None) -> str:
        """The counts; with `planned` (an interrupted run) also how many were never reached."""
        counts = f"{self.done} done, {self.skipped} skipped, {self.failed} failed"
        if planned is not None:
            counts += f", {max(0, planned - self.done - self.skipped - self.failed)} not started"
        return f"{counts} in {time.perf_counter() - self.start:.1f} s"

