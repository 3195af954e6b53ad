"""The temporal blend's flows, computed ahead of the blend and in parallel over frame pairs.

The blend of frame t needs the DIS flows between the INPUT frames t−1 and t (forward and
backward, for the occlusion test): they depend on the inputs only, not on any output, so they
need not wait for the network nor for the previous blend. With `check` off only the backward
flow is computed (half the DIS time): the blend then trusts a pixel on the motion-boundary,
inside-the-frame and photometric tests alone (`TemporalSettings.flow_check`). `FlowAhead` is called by the media
pipeline's decode workers, once per frame in stream order (the workers are a FIFO pool, so the
worker with frame t starts after frame t−1's): it shrinks the frame's luma to the flow size,
publishes it, waits for frame t−1's (already being shrunk by another worker) and computes the
pair's two flows there. The sequential part of `--temporal` is then only the warp and blend
(`temporal_torch`). Not here: the flow itself (`flow.py`) and the masks (the blenders).
"""
from __future__ import annotations

import threading
from concurrent.futures import Future

import numpy as np

from .flow import BLEND_PRESET, dis, shrink

WAIT_S = 120.0    # a predecessor this late means a bug, not a slow frame: fail the frame instead of hanging


def pair_flows(engine, previous: np.ndarray, current: np.ndarray, check: bool = True) -> np.ndarray:
    """float32 (2, h, w, 2): [forward previous → current, backward current → previous], from two
    uint8 (h, w) frames at flow size and one DIS instance (`flow.dis`); without `check`
    (1, h, w, 2): [backward] alone. The forward flow serves only the forward–backward test."""
    if not check:
        return engine.calc(current, previous, None)[None]
    return np.stack([engine.calc(previous, current, None), engine.calc(current, previous, None)])


class FlowAhead:
    """Pair flows of one stream, frame by frame; thread-safe, one DIS instance per thread."""

    def __init__(self, preset: str = BLEND_PRESET, max_side: int | None = 640, check: bool = True):
        dis(preset)   # checks the preset now, not in a worker
        self.preset, self.max_side, self.check = preset, max_side, check
        self._slots: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def _slot(self, index: int) -> Future:
        with self._lock:
            return self._slots.setdefault(index, Future())

    def __call__(self, index: int, luma: np.ndarray | None) -> np.ndarray | None:
        """luma: uint8 (H, W) of frame `index` (its Y plane or grey), None where the frame failed
        (every index of the stream must be handed in once). → `pair_flows` from frame index−1 to
        this one, None for the first frame, after a failed one or a change of size."""
        small = shrink(np.ascontiguousarray(luma), self.max_side) if luma is not None else None
        self._slot(index).set_result(small)
        if index == 0 or small is None:
            return None
        previous = self._slot(index - 1).result(timeout=WAIT_S)
        with self._lock:
            self._slots.pop(index - 1, None)   # frame index−1's only reader is this one
        if previous is None or previous.shape != small.shape:
            return None
        engine = getattr(self._local, "dis", None)
        if engine is None:
            engine = self._local.dis = dis(self.preset)
        return pair_flows(engine, previous, small, self.check)
