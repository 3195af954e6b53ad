"""Run planned jobs through the media pipeline: one `Record` per job, in order.

The one loop the CLI (`styleforge stylize`) and the API (`styleforge.stylize_files`) share, so
both write the same names the same way: output folders are made and marked (`plan.prepare`),
then the images stream through `media.images.stylize_images` (bounded queues, decode / engine /
encode overlapped, a bad file fails alone), which takes each target's claim before it decodes
and writes with a no-clobber atomic rename unless overwriting (`jobs.write`). A job whose target
another run finished or holds meanwhile comes back as a skipped record.
Not here: which jobs (`jobs.plan`), the engine (`api.get_stylizer`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Iterator, Sequence

from ..engine.options import StylizeOptions
from .plan import Job, Plan, prepare


def run_jobs(jobs: Sequence[Job], stylizer, options: StylizeOptions, pipeline=None, *,
             stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> Iterator:
    """Stylize `jobs` (usually `Plan.pending(options.overwrite)`) with `stylizer`; yields one
    `media.Record` per job in job order. `pipeline` is a `media.PipelineOptions` (None: defaults)."""
    from ..media.images import ImageJob, stylize_images
    from ..media.options import PipelineOptions
    prepare(jobs)
    image_jobs = [ImageJob(job.source, job.target) for job in jobs]   # a list: its length picks the codec
    yield from stylize_images(image_jobs, stylizer, options, pipeline or PipelineOptions(),
                              stdin=stdin, stdout=stdout)


@dataclass
class RunReport:
    """What a run did, one `media.Record` per planned input (and per refused one)."""
    records: list = field(default_factory=list)

    @property
    def done(self) -> list:
        return [r for r in self.records if r.ok and not r.skipped]

    @property
    def skipped(self) -> list:
        return [r for r in self.records if r.skipped]

    @property
    def failed(self) -> list:
        return [r for r in self.records if not r.ok]


def refused_records(plan: Plan) -> list:
    """One error record per input the plan refused (`Plan.errors` lines are "<input>: <why>")."""
    from ..media.records import Record
    return [Record(-1, message.split(": ", 1)[0], error=message) for message in plan.errors]


def done_records(plan: Plan, todo: Sequence[Job]) -> list:
    """One skipped record per planned job left out of `todo` (`Plan.pending`: its output exists)."""
    from ..media.records import Record
    pending = set(todo)
    return [Record(-1, str(job.source), str(job.target), skipped=True,
                   notes=[f"{job.target} exists (--overwrite to replace it)"])
            for job in plan.jobs if job not in pending]
