"""One engine per device, each in its own process, over one list of image jobs (`--gpus`).

`run_on_devices(jobs, options, pipeline, devices)` takes the jobs of a plan (`jobs.plan_jobs`,
usually `Plan.pending(overwrite)`), makes their output folders (`jobs.prepare`) and starts one
spawned worker per device string (`jobs.devices`): it loads the style once, owns its one device
(`CUDA_VISIBLE_DEVICES`, or the CPU for tests), warms its pipeline on the first job's image
(`media.images.warm_images`: codec set-up, the engine's first call and graph capture at that
shape, into a scratch folder) and only then says ready, so "engines loaded" means ready to run
at speed. Then it runs the library's media pipeline (`media.images.stylize_images`) over the
jobs it claims. Claims are dynamic and lazy: the pipeline's feeder pulls the next job from a
shared counter whenever its decoders have room (up to about 2 × `depth` jobs in flight per
worker, `_Worker.peak_in_flight` says how many were), so decode, engine and encode overlap as in
one process, a slow or late device takes fewer jobs and never holds up the rest, and each index
is claimed once (a claim is one lock on a shared integer, far below an image's cost; claiming
chunks would gain nothing and lengthen the tail). Each target's claim and no-clobber atomic write
(`jobs.write`, inside the pipeline) keep an output from being written twice even by an
overlapping run. The parent yields the workers' `Record`s as they arrive (`index` is the job's
position in `jobs`), so one report and one progress bar show all devices. Outputs are the bytes
one device writes: each worker runs the same options, and its pipeline sees the whole plan's
length, so the codec choice matches. Each worker's decode/encode threads and torch's intra-op
threads are the host's cores ÷ devices. A worker that has finished is joined only in `close`,
never inside the receive loop: its exit (CUDA context teardown) takes a second or so, and
the other workers' last records must not wait behind it.

Timeline (for the scaling bench, `DeviceRun.timeline`): each worker stamps when it passed the go
barrier and when it sent each record, on `time.monotonic` (system-wide on Linux, so comparable
with the parent's stamps); the parent keeps, per worker, its first and last record's arrival and
the largest send → arrival delay (time a record waited for the parent).

Stopping: Ctrl-C (the workers ignore SIGINT; the parent decides) or a worker that dies or cannot
load its engine stops every worker from claiming more; the jobs in flight finish and are written
whole, or, past `drain_s`, the workers are terminated. Then the temp files and target claims
that dead workers left in the output folders are removed: no partial file stays. A failed worker
is a `WorkerFailed` naming the device and the reason; jobs never claimed are simply not written
(a re-run skips what exists and does the rest). Not here: which files and output names
(`jobs.plan`), the engine, one long video split over devices (docs/multi_gpu.md says why).
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Iterator, Sequence

from ..engine.options import StylizeOptions
from ..media.options import PipelineOptions
from ..media.records import Record
from ..switches import environment_added
from .devices import engine_device, worker_environment

DRAIN_S = 30.0      # after a stop, how long the workers may finish the jobs they hold
_POLL_S = 0.5
_EXIT_S = 30.0      # how long a worker that finished may take to exit before it is terminated


class WorkerFailed(RuntimeError):
    """A worker died or could not start; the message names its device and the reason."""


@dataclass
class _Worker:
    device: str
    process: mp.Process
    conn: Connection
    engine: str | None = None     # the engine it loaded, once ready
    warm_s: float = 0.0           # its pipeline's one-time set-up before it said ready
    peak_in_flight: int = 0       # the most jobs its pipeline held at once (overlap), once done
    records: int = 0              # records received from it
    go_at: float | None = None    # when it passed the go barrier (its own stamp, time.monotonic)
    first_at: float | None = None  # when its first record arrived here
    last_at: float | None = None   # when its last record arrived here
    lag_max: float = 0.0          # the longest a record waited between its send and its arrival
    done: bool = False            # it finished every job it claimed
    failure: str | None = None    # what it said before it stopped, if it failed


class _Claims:
    """The jobs a worker's pipeline reads: the next unclaimed index of the shared plan, until
    the plan is used up or the parent says stop. Its length is the whole plan's, so the worker
    picks the codec a one-device run over the same plan picks (`media.codecs.resolve_codec`)."""

    def __init__(self, jobs: Sequence, counter, stop):
        self.jobs, self.counter, self.stop = jobs, counter, stop
        self.claimed: list[int] = []    # local pipeline index → index in `jobs`

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self):
        while not self.stop.is_set():
            with self.counter.get_lock():
                index = self.counter.value
                if index >= len(self.jobs):
                    return
                self.counter.value = index + 1
            self.claimed.append(index)
            yield self.jobs[index]


def _worker_main(device: str, jobs: Sequence, options: StylizeOptions, pipeline: PipelineOptions,
                 threads: int, counter, stop, go, conn: Connection) -> None:
    """One device's process: load the engine, warm it, then stream claimed jobs, sending each record."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's to handle
    try:
        import torch

        from ..api import get_stylizer
        from ..media.images import stylize_images, warm_images
        from ..media.pipeline import Stats
        torch.set_num_threads(threads)   # N processes' intra-op pools share the host's cores
        stylizer = get_stylizer(dataclasses.replace(options, device=engine_device(device)))
        started = time.perf_counter()
        if jobs and not stop.is_set():
            warm_images(jobs[0], stylizer, options, pipeline, len(jobs))
        conn.send(("ready", (stylizer.describe(), time.perf_counter() - started)))
        if go is not None:
            go.wait()
        conn.send(("go", time.monotonic()))
        claims, stats = _Claims(jobs, counter, stop), Stats()
        for record in stylize_images(claims, stylizer, options, pipeline, stats=stats):
            record.index = claims.claimed[record.index]
            conn.send(("record", (record, time.monotonic())))
        conn.send(("done", stats.peak_in_flight))
    except BaseException as exc:    # noqa: BLE001 - the parent reports it; the process ends
        conn.send(("fatal", f"{type(exc).__name__}: {exc}" if not isinstance(exc, (RuntimeError, ValueError))
                   else str(exc)))
        raise SystemExit(1) from None
    finally:
        conn.close()


def _start_with_env(process: mp.Process, env: dict[str, str]) -> None:
    """Start a spawned process with `env` added to this one's environment (what the child sees
    from its first instruction, before torch can read CUDA_VISIBLE_DEVICES)."""
    with environment_added(env):
        process.start()


def _exit_reason(process: mp.Process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


class DeviceRun:
    """Iterate for the records; use as a context manager so an interrupt or an error in the
    caller's loop still stops the workers and removes partial files (`close`)."""

    def __init__(self, jobs: Sequence, options: StylizeOptions, pipeline: PipelineOptions,
                 devices: Sequence[str], drain_s: float = DRAIN_S, start_together: bool = False):
        if not devices:
            raise ValueError("run_on_devices needs at least one device")
        self.jobs, self.options, self.devices, self.drain_s = list(jobs), options, tuple(devices), drain_s
        self.start_together = start_together
        share = max(1, (os.cpu_count() or 1) // len(self.devices))
        # One pipeline per device: their decode/encode threads and torch's intra-op pools share
        # the host's cores.
        self.pipeline = pipeline if pipeline.workers is not None else dataclasses.replace(
            pipeline, workers=min(16, share))
        self.threads = share
        self.workers: list[_Worker] = []
        self.started = self.ready_at = self.finished = None
        self.after_ready = 0                        # records received once every engine was ready
        self.late = 0                               # records finished after a stop (written, not yielded)
        self._closed = False

    def timeline(self) -> dict[str, dict[str, float | None]]:
        """Per worker (keyed 'cuda:0', or 'cuda:0#2' for a repeated device), in seconds from the
        moment every engine was ready (the go): when it passed go, its first and last record's
        arrival here, and the longest a record waited for this process to receive it."""
        def since(t: float | None) -> float | None:
            return None if t is None or self.ready_at is None else round(t - self.ready_at, 4)
        names = [w.device for w in self.workers]
        return {(w.device if names.count(w.device) == 1 else f"{w.device}#{i}"):
                {"go_s": since(w.go_at), "first_s": since(w.first_at), "last_s": since(w.last_at),
                 "lag_max_s": round(w.lag_max, 4)}
                for i, w in enumerate(self.workers)}

    def shares(self) -> str:
        """'cuda:0 312, cuda:1 288': how many jobs each device finished."""
        return ", ".join(f"{w.device} {w.records}" for w in self.workers)

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self.workers]

    def __enter__(self) -> DeviceRun:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[Record]:
        self._start()
        try:
            yield from self._receive(self._live())
        finally:
            self.close()
        failed = [w for w in self.workers if w.failure]
        if failed:
            first = failed[0]
            written = sum(w.records for w in self.workers) + self.late
            raise WorkerFailed(f"the worker on {first.device} {first.failure}; the other workers "
                               f"stopped after their jobs in flight ({written} of {len(self.jobs)} "
                               "jobs finished; a re-run skips the written outputs and does the rest)")

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self.counter, self.stop = ctx.Value("q", 0), ctx.Event()
        self.go = ctx.Event() if self.start_together else None
        self.started = time.monotonic()
        for device in self.devices:
            reader, writer = ctx.Pipe(duplex=False)
            process = ctx.Process(target=_worker_main, name=f"styleforge-{device}", daemon=True,
                                  args=(device, self.jobs, self.options, self.pipeline, self.threads,
                                        self.counter, self.stop, self.go, writer))
            _start_with_env(process, worker_environment(device))
            writer.close()      # the child holds the only write end: its exit is our EOF
            self.workers.append(_Worker(device, process, reader))

    def _live(self) -> dict[Connection, _Worker]:
        return {w.conn: w for w in self.workers if not w.conn.closed}

    def _receive(self, live: dict[Connection, _Worker], deadline: float | None = None) -> Iterator[Record]:
        """Records from the workers in `live` until all have ended (or `deadline` passes)."""
        while live and (deadline is None or time.monotonic() < deadline):
            for conn in wait(list(live), timeout=_POLL_S):
                worker = live[conn]
                try:
                    kind, payload = conn.recv()
                except (EOFError, OSError):
                    del live[conn]
                    conn.close()
                    if not worker.done and worker.failure is None:
                        # It died without a word: it is gone (or going), so this join is short
                        # and gives the reason. A finished worker is joined in `close`.
                        worker.process.join()
                        worker.failure = f"(pid {worker.process.pid}) {_exit_reason(worker.process)}"
                    if worker.failure is not None and not self.stop.is_set():
                        self.stop.set()          # the others finish what they hold, claim no more
                        limit = time.monotonic() + self.drain_s
                        deadline = limit if deadline is None else min(deadline, limit)
                    continue
                if kind == "record":
                    record, sent = payload
                    now = time.monotonic()
                    worker.records += 1
                    worker.first_at = worker.first_at or now
                    worker.last_at, worker.lag_max = now, max(worker.lag_max, now - sent)
                    self.after_ready += self.ready_at is not None
                    yield record
                elif kind == "go":
                    worker.go_at = payload
                elif kind == "ready":
                    worker.engine, worker.warm_s = payload
                    if all(w.engine for w in self.workers):
                        self.ready_at = time.monotonic()
                        if self.go is not None:
                            self.go.set()
                elif kind == "done":
                    worker.done, worker.peak_in_flight = True, payload
                elif kind == "fatal":
                    worker.failure = f"failed: {payload}"
        self.finished = time.monotonic()

    def close(self) -> None:
        """Stop claiming, let the jobs in flight finish for up to `drain_s` (a second Ctrl-C cuts
        that short), end what is left, and remove the partial files of dead writers."""
        if self._closed or not self.workers:
            return
        self._closed = True
        self.stop.set()
        if self.go is not None:
            self.go.set()           # a worker still waiting to start then finds nothing to claim
        try:
            for _ in self._receive(self._live(), time.monotonic() + self.drain_s):
                self.late += 1
        except KeyboardInterrupt:
            pass
        finally:
            try:     # the finished end on their own (CUDA teardown); a second Ctrl-C cuts this short
                for worker in self.workers:
                    if worker.done:
                        worker.process.join(_EXIT_S)
            except KeyboardInterrupt:
                pass
            for worker in self.workers:
                if worker.process.is_alive():
                    worker.process.terminate()
                worker.process.join(5)
                if worker.process.is_alive():
                    worker.process.kill()
                    worker.process.join()
                if not worker.conn.closed:
                    worker.conn.close()
            _sweep_partial_files(self.jobs)


def _sweep_partial_files(jobs: Sequence) -> None:
    """Remove what the ended workers left beside the targets: temp files of writers that are
    gone, without the usual age limit since we know they ended, and their claims."""
    from ..io.atomic import STALE_AFTER_S, sweep_stale_temps
    from .write import clear_if_stale
    later = time.time() + STALE_AFTER_S + 1
    for folder in {Path(job.target).parent for job in jobs}:
        sweep_stale_temps(folder, now=later)
    for job in jobs:
        clear_if_stale(job.target)


def run_on_devices(jobs: Sequence, options: StylizeOptions, pipeline: PipelineOptions = PipelineOptions(),
                   devices: Sequence[str] = ("cuda:0",), drain_s: float = DRAIN_S,
                   start_together: bool = False) -> DeviceRun:
    """The run (iterate it for `Record`s, as they finish; use it in a `with`). `start_together`:
    no worker claims a job before every engine is loaded (for measuring; else the first ready
    starts at once). `jobs` are
    `jobs.Job`s (or anything with `source` and `target`), file to file: stdin/stdout are one
    image for one device."""
    from ..media.images import ImageJob
    from .plan import prepare
    if any(str(job.source) == "-" or str(job.target) == "-" for job in jobs):
        raise ValueError("--gpus works on files; stdin/stdout ('-') is one image for one device")
    if hasattr(jobs[0] if jobs else None, "out_root"):
        prepare(jobs)
    return DeviceRun([ImageJob(job.source, job.target) for job in jobs], options, pipeline, devices,
                     drain_s, start_together)


__all__ = ["DeviceRun", "WorkerFailed", "run_on_devices"]
