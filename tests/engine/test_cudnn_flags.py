"""engine.cudnn_flags: sections of several threads over PyTorch's process-wide cuDNN flags leave
the caller's values behind whatever order they close in, and inside, the newest open section's
flags hold (plain save/restore left the autotuner on for good after two overlapping runners)."""
from __future__ import annotations

import threading

import torch

from styleforge.engine.cudnn_flags import cudnn_flags


def flags():
    cudnn = torch.backends.cudnn
    return cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32


def set_flags(values):
    cudnn = torch.backends.cudnn
    cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32 = values


def test_sections_nest_within_a_thread():
    saved = flags()
    try:
        set_flags((False, False, True))
        with cudnn_flags(True, True, False):
            assert flags() == (True, True, False)
            with cudnn_flags(False, True, False):
                assert flags() == (False, True, False)
            assert flags() == (True, True, False)     # the outer section's again
        assert flags() == (False, False, True)
    finally:
        set_flags(saved)


def test_overlapping_sections_of_two_threads_give_the_callers_flags_back():
    """A warm-up (autotuner on) opens, an eager call (off) opens on another thread, the warm-up
    closes first, then the eager call: the order in which a plain save/restore restored the
    warm-up's "on" last."""
    saved = flags()
    steps = [threading.Event() for _ in range(4)]
    seen = {}

    def warm_up():
        with cudnn_flags(True, True, True):
            steps[0].set()
            steps[1].wait(5)
        seen["after warm-up closed"] = flags()
        steps[2].set()

    def eager():
        steps[0].wait(5)
        with cudnn_flags(False, True, True):
            seen["both open"] = flags()
            steps[1].set()
            steps[2].wait(5)
            seen["eager alone"] = flags()
        steps[3].set()

    try:
        set_flags((False, False, False))
        threads = [threading.Thread(target=f) for f in (warm_up, eager)]
        for t in threads:
            t.start()
        assert steps[3].wait(5)
        for t in threads:
            t.join(5)
        assert seen == {"both open": (False, True, True), "after warm-up closed": (False, True, True),
                        "eager alone": (False, True, True)}
        assert flags() == (False, False, False)
    finally:
        set_flags(saved)
