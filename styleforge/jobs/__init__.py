"""The job plan: which outputs a run writes, under which names, each exactly once.

The CLI (`styleforge stylize`), the API (`styleforge.stylize_files`), `--gpus` and the Ray
runner all plan with this package, so every path writes the same names, and write through it,
so each output is written once even when runs overlap.

Plan jobs from inputs + output + options::

    from styleforge.jobs import plan_jobs
    plan = plan_jobs(["trip/", "cat.jpg"], output=None, options=StylizeOptions(style="candy"),
                     recursive=False, keep_names=False)
    plan.jobs              # [Job(source, target, out_root)], every planned output, done or not
    plan.errors            # ["<input>: <why>"], inputs refused (missing, collisions, unwritable)
    plan.pending(overwrite)  # the jobs still to run (all of them with overwrite)

  `plan_jobs` raises ValueError when no plan can be made (a bad -o, several inputs into one file).

A job's target name: `job.target`; from parts, `output_label(options)` (style + the settings
that change the picture, `jobs.naming`) and `styled_name("sub/photo.jpg", label)` →
`sub/photo_<label>.jpg`. Default settings keep the plain `photo_<style>.jpg`.

Tell a job is done: `job.done` / `is_done(target)` — the target exists (outputs only appear
whole, by rename).

Write one output exactly once, atomically::

    write_once(target, write, overwrite=False)   # write(temp_name) fills a temp file beside
                                                 # target; renamed onto it; None if done/taken

  or hold the claim yourself around longer work: `with claim(target) as held:` (`claim` returns
  None while another live writer holds it). Before writing into output folders call
  `prepare(jobs)` (creates them with the OUTPUT_MARK that later scans skip). A killed writer's
  temp file and claim are removed by the next run's first write into that folder (`sweep`).

Run jobs through the media pipeline (decode / engine / encode overlapped, claims taken)::

    for record in run_jobs(plan.pending(options.overwrite), stylizer, options, pipeline):
        ...   # one media.Record per job, in order (output, error, skipped, notes)

  `refused_records(plan)` and `done_records(plan, todo)` are the records of what the plan settled
  before any work; `RunReport(records)` sums them up (`.done`, `.skipped`, `.failed`). The whole
  loop, as a call: `styleforge.stylize_files(inputs, output, style, **fields) -> RunReport`.
"""
from .naming import NAME_MAX, output_kind, output_label, style_label, styled_name, writable_name
from .plan import OUTPUT_MARK, STDIO, Job, Plan, expand_inputs, plan_jobs, plan_outputs, prepare
from .run import RunReport, done_records, refused_records, run_jobs
from .write import Claim, claim, is_done, sweep, write_once

__all__ = ["NAME_MAX", "OUTPUT_MARK", "STDIO", "Claim", "Job", "Plan", "RunReport", "claim",
           "done_records", "expand_inputs", "is_done", "output_kind", "output_label", "plan_jobs",
           "plan_outputs", "prepare", "refused_records", "run_jobs", "style_label", "styled_name",
           "sweep", "write_once", "writable_name"]
