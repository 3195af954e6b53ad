"""The multi-device executor's receive loop (`DeviceRun`) against stand-in workers that speak its
protocol (ready, go, records, done) without loading an engine: a worker that has finished but is
slow to exit (a CUDA context's teardown) must not hold back the other workers' records, and
`close` still lets it end on its own. The real workers are tested in test_multi_device.py."""
from __future__ import annotations

import multiprocessing as mp
import time

import pytest

from styleforge.engine.options import StylizeOptions
from styleforge.jobs.multi_device import DeviceRun, _Worker
from styleforge.media.options import PipelineOptions
from styleforge.media.records import Record

SLOW_EXIT_S = 2.0


def _stand_in(conn, record_after: float | None, exit_after: float) -> None:
    """Say ready, pass the go, send one record after `record_after` s (None: none), say done,
    close the pipe, then take `exit_after` s to exit."""
    conn.send(("ready", ("stand-in", 0.0)))
    conn.send(("go", time.monotonic()))
    if record_after is not None:
        time.sleep(record_after)
        conn.send(("record", (Record(0, "in.jpg", "out.jpg"), time.monotonic())))
    conn.send(("done", 1))
    conn.close()
    time.sleep(exit_after)


@pytest.mark.slow     # waits out a worker's 2-s exit on purpose
@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="the stand-ins are forked")
def test_a_finished_worker_slow_to_exit_does_not_hold_back_the_others_records():
    ctx = mp.get_context("fork")
    run = DeviceRun([], StylizeOptions(device="cpu"), PipelineOptions(), ("cpu", "cpu"))
    run.stop, run.go, run.started = ctx.Event(), None, time.monotonic()
    for record_after, exit_after in ((None, SLOW_EXIT_S), (0.5, 0.0)):
        reader, writer = ctx.Pipe(duplex=False)
        process = ctx.Process(target=_stand_in, args=(writer, record_after, exit_after), daemon=True)
        process.start()
        writer.close()
        run.workers.append(_Worker("cpu", process, reader))
    slow, busy = run.workers
    seen = []
    try:     # the loop `DeviceRun.__iter__` runs once its workers are started
        for record in run._receive(run._live()):
            seen.append((record.output, slow.process.is_alive(), time.monotonic() - run.started))
    finally:
        run.close()
    assert [output for output, _, _ in seen] == ["out.jpg"]
    _, slow_alive, arrived = seen[0]
    assert slow_alive                           # received while the finished one was still exiting
    assert arrived < SLOW_EXIT_S                # not after its exit
    assert busy.lag_max < SLOW_EXIT_S / 2 and busy.records == 1 and busy.first_at == busy.last_at
    assert slow.done and slow.failure is None and slow.records == 0
    # close() waited for the finished worker to end by itself, not terminated it.
    assert not slow.process.is_alive() and slow.process.exitcode == 0
    timeline = run.timeline()
    assert set(timeline) == {"cpu#0", "cpu#1"}
    assert timeline["cpu#1"]["first_s"] == timeline["cpu#1"]["last_s"] > 0.0
    assert timeline["cpu#0"]["first_s"] is None and timeline["cpu#0"]["go_s"] is not None
