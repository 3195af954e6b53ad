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

from typing import BinaryIO, Iterator, Sequence

from ..engine.options import StylizeOptions
from .plan import Job, prepare


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
