"""`bench.progress`: a stage's start line and its "still in" lines (calls done, time since the
last), driven by a test clock, and the deadline's two ends."""
from __future__ import annotations

from styleforge.bench.progress import Deadline, Stages


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_stage_says_when_it_started_and_how_far_it_got():
    clock, lines = Clock(), []
    stages = Stages(lines.append, every=30, clock=clock, thread=False)
    clock.now += 12
    stages.start("ours-fp32 512 px")
    assert lines == ["[12 s] ours-fp32 512 px …"]
    clock.now += 5
    stages.tick()
    clock.now += 5
    stages.tick()
    stages.beat()                       # 10 s into the stage: not yet
    assert len(lines) == 1
    clock.now += 25
    stages.beat()
    assert lines[1] == "[47 s] still in ours-fp32 512 px: 2 calls done in 35 s, the last ended 25 s ago"
    stages.beat()                       # the next one waits another `every`
    assert len(lines) == 2
    stages.start("ours-fp32 1024 px")   # a new stage counts from zero
    clock.now += 30
    stages.beat()
    assert lines[-1] == "[77 s] still in ours-fp32 1024 px: 0 calls done in 30 s, the last ended 30 s ago"
    stages.close()
    clock.now += 60
    stages.beat()                       # closed: silent
    assert len(lines) == 4


def test_deadline_without_seconds_never_passes():
    assert not Deadline.after(None).passed()
    assert Deadline(0.0).passed()
