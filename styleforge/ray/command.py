"""`styleforge stylize INPUTS… -o OUT --ray [ADDRESS]`: the CLI's planned jobs, run on a Ray cluster.

The command plans as always (`jobs.plan_jobs`: the same names, refusals and skips as without
`--ray`), makes and marks the output folders, then hands the pending jobs to `stylize_dataset`
as rows `{path, target}` and prints each result row as the command's own report does (its bar,
its counts, `--json` records), so Ray's progress bars are turned off. The paths must be readable
and writable by every worker under the same names: one machine, or a shared filesystem.

ADDRESS: none (`RAY_ADDRESS`, else a new local cluster), `local` (a new local cluster), `auto`
(the cluster already running on this machine), `HOST:PORT` (its head node), `ray://HOST:PORT`
(Ray Client). Because ADDRESS is optional, a value that is not an address is refused with a hint
(`--ray photos/` would otherwise take the folder for an address): put `--ray` after the inputs.
"""
from __future__ import annotations

import math
import os
import re

_ADDRESS = re.compile(r"^(|auto|local|[\w.-]+:\d+|\w+://\S+)$")


def ray_address(text: str) -> str:
    """argparse type of `--ray`'s value: an address, else a ValueError that says what to do."""
    if not _ADDRESS.match(text):
        raise ValueError(f"{text!r} is not a Ray address (auto, local, HOST:PORT or ray://HOST:PORT); "
                         "put --ray after the inputs, e.g. `stylize photos/ -o out --ray`")
    return text


def add_ray_arguments(p) -> None:
    """`--ray [ADDRESS]` and `--ray-actors N` on `styleforge stylize`'s parser."""
    from styleforge.commands.arguments import _checked, _number_in
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   type=_checked(ray_address, "Ray address"),
                   help="run on a Ray cluster (pip install \"styleforge[ray]\"; docs/ray.md): none = "
                        "RAY_ADDRESS or a new local cluster, auto = the running one, HOST:PORT, ray://…")
    p.add_argument("--ray-actors", type=_checked(_number_in(1, math.inf, int), "positive integer"), default=None,
                   metavar="N",
                   help="--ray: actors in the pool (default: one per GPU, else one per two CPUs)")


def run_on_ray(todo, options, address: str, actors: int | None, report) -> int:
    """Stylize the planned `todo` jobs on the cluster at `address`; print through `report`."""
    from styleforge.jobs import STDIO, prepare
    from styleforge.media.records import Record
    try:
        from styleforge.ray.dataset import require_ray
        ray = require_ray()
    except ImportError as exc:
        report.error(str(exc))
        return 2
    if any(str(job.source) == STDIO or str(job.target) == STDIO for job in todo):
        report.error("--ray reads and writes files; stdin/stdout ('-') needs a run without --ray")
        return 2
    from ray.data import DataContext

    from styleforge.ray.actor import FAILED, SKIPPED
    from styleforge.ray.dataset import stylize_dataset
    prepare(todo)
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address or None, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    try:
        import logging
        for name in ("ray", "ray.data"):                          # the report says what happened
            logging.getLogger(name).setLevel(logging.WARNING)
        DataContext.get_current().enable_progress_bars = False     # and its bar is the one shown
        # Absolute names: a worker on another node does not share the driver's working folder.
        given = {os.path.abspath(job.target): job for job in todo}
        rows = [{"path": os.path.abspath(job.source), "target": target} for target, job in given.items()]
        ds = ray.data.from_items(rows)
        report.say(f"ray: {len(rows)} images on {_describe(ray)}", "dim")
        with report.progress:
            for index, row in enumerate(stylize_dataset(ds, options=options, actors=actors).iter_rows()):
                status, error = row["status"], row["error"] or None
                job = given[row["output"]]       # the records name files as the user gave them
                record = Record(index, str(job.source), str(job.target) if status != FAILED else None,
                                int(row["width"]) or None, int(row["height"]) or None,
                                float(row["seconds"]), error if status == FAILED else None,
                                notes=[error] if status == SKIPPED else [], skipped=status == SKIPPED)
                report.item(record)
    except KeyboardInterrupt:
        report.say(f"interrupted: {report.summary(planned=len(todo))}", "bold red")
        return 130
    except Exception as exc:     # the job failed as a whole, e.g. no actor could load the style
        report.say(f"error: {_root_message(exc)}", "bold red")
        report.say(f"stopped: {report.summary(planned=len(todo))}")
        return 2
    finally:
        if started_here:
            ray.shutdown()
    report.say(report.summary())
    return 1 if report.failed else 0


def _describe(ray) -> str:
    resources = ray.cluster_resources()
    return (f"{len(ray.nodes())} node(s), {int(resources.get('CPU', 0))} CPUs, "
            f"{int(resources.get('GPU', 0))} GPUs")


_EXCEPTION_NAME = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception): ")


def _root_message(exc: BaseException) -> str:
    """One line: a Ray error's text ends with the worker's own exception, e.g. an actor that could
    not load the style ("CheckpointError: x.safetensors: no such checkpoint file")."""
    from ray.exceptions import RayError
    while exc is not None and not isinstance(exc, RayError):
        exc = exc.__cause__ or exc.__context__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] if exc is not None else []
    if not lines:
        return "the Ray job failed (see the Ray logs)"
    return _EXCEPTION_NAME.sub("", lines[-1])
