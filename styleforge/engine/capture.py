"""CUDA-graph capture that no other thread's CUDA work can break, and the lock that ensures it.

A stream capture records the launches on one stream. CUDA ends it with
cudaErrorStreamCaptureInvalidated when, while it runs, a call the capture forbids is made: in
the default "global" mode by ANY thread of the process (a pinned allocation in a decode worker,
an event wait in an encode worker, a synchronous copy). Every capture in the package goes
through `capturing`: "thread_local" mode, so only the capturing thread's calls count, and the
exclusive side of one process-wide lock (`CAPTURE_LOCK`). Every other CUDA call in the package
holds the shared side (`cuda_work`), so none runs while a graph is captured: the media pipeline's
decode workers (pinned staging, nvJPEG), the engine stage's whole batch (uploads of frames and
flows, the stylizer's resampling and checks, the network, the temporal blend, the colour
conversion, the downloads), encode workers waiting on their pixels, the temporal blender, the
runners' eager calls, warm-ups, plan timing and graph releases. Thread-local mode alone does not
make other threads' calls safe: CUDA forbids synchronising the whole device on ANY thread while
any stream of it captures (CUDA Programming Guide, "Prohibited and Unhandled Operations"), and
cuDNN's autotuner does exactly that when it times a convolution new to it (cudnn_frontend's
`time_sorted_plan` calls cudaDeviceSynchronize and ignores the error, which the next launch
check on that thread then raises). `torch.backends.cudnn.benchmark` is one process-wide flag
(`engine.cudnn_flags`), so any thread's convolution may autotune while a runner has it on.
Shared holders run together; a capture waits for those inside and new ones wait for the capture
(so a steady stream of workers cannot starve it). Both sides are re-entrant per thread, and a
thread that holds the shared side may capture: it gives its shared hold up while it waits and
captures (so two such threads cannot deadlock) and takes it back after.

Python's cyclic garbage collector runs finalizers on whichever thread happens to trigger it: a
`CUDAGraph` it frees on the capturing thread calls cudaGraphExecDestroy there, which thread-local
mode refuses ("operation not permitted when stream is capturing"; a warning from
CUDAGraph::reset with that text came up in the device's stress run, from a thread not known).
`capturing` pauses automatic collection while it captures.

Every capture runs on the package's own capture stream (`capture_stream`, one per device), not
on `torch.cuda.graph`'s default one. A `torch.cuda.Stream()` is not a new stream: PyTorch hands
out 32 pooled streams per priority in turn (c10/cuda/CUDAStream.h, "Stream pool note"), and its
default capture stream is one of them, so one in every 32 streams a process asks for afterwards
(a worker's, the engine stage's, a warm-up's) is the capturing stream itself. Work another
thread issues there joins or breaks the capture, and pinned host memory used there and freed
during a capture gets its release event recorded inside it; the host allocator
(aten/src/ATen/cuda/CachingHostAllocator.cpp) later queries that event from whichever thread
allocates pinned memory next (`.item()` does; only a thread whose own current stream is
capturing skips the query), which fails with "operation not permitted on an event last recorded
in a capturing stream" (cudaErrorCapturedEvent). The
capture stream is taken from the pool of priority −1, which `torch.cuda.Stream()` (priority 0)
never hands out, so no default stream in the process aliases it. Other threads' unlocked CUDA
work on their own streams (a caller's own code, the stress test's raw launches) is then within
CUDA's rules as long as it never synchronises the whole device: in thread-local capture mode
only the capturing thread is barred from unsafe calls (CUDA Runtime API, cudaStreamBeginCapture
and cudaThreadExchangeStreamCaptureMode).

PyTorch's default CUDA generator is process-wide state that every capture enters: from a
capture's begin to its end, a random draw from it on ANY other thread raises "Offset increment
outside graph capture encountered unexpectedly" (a CPU-side check, so no capture mode helps).
Random draws on the GPU are therefore CUDA work: hold `cuda_work()` around them. And a capture
that fails leaves the generator in that state for good (torch raises cudaStreamEndCapture's
error before the generator's epilogue), so `capturing` closes it with a one-kernel capture.

Not here: what is captured (`engine.runner`, `engine.arbitrary`). A capture that fails anyway
raises from `capturing`; the runners turn that into one eager call and one warning.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

import torch


class CaptureLock:
    """A readers–writer lock: `shared()` for CUDA work, `exclusive()` for a capture; writers first."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers: dict[int, int] = {}   # thread id → how deep it holds the shared side
        self._writer: int | None = None
        self._writer_depth = 0
        self._writers_waiting = 0
        self.captures = 0                    # exclusive sections entered (tests read it)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._writer != me and me not in self._readers:
                while self._writer is not None or self._writers_waiting:
                    self._cond.wait()
            self._readers[me] = self._readers.get(me, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                self._readers[me] -= 1
                if not self._readers[me]:
                    del self._readers[me]
                    self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """The capture side. A thread holding the shared side gives it up while it waits and
        captures and takes it back afterwards: two shared holders that both capture (two engine
        threads) would otherwise each wait for the other to leave."""
        me = threading.get_ident()
        with self._cond:
            kept = 0
            if self._writer != me:
                kept = self._readers.pop(me, 0)
                if kept:
                    self._cond.notify_all()
                self._writers_waiting += 1
                try:
                    while self._writer is not None or self._readers:
                        self._cond.wait()
                except BaseException:   # interrupted while waiting: the shared hold is the caller's again
                    if kept:
                        self._readers[me] = kept
                    raise
                finally:
                    self._writers_waiting -= 1
                self._writer = me
            self._writer_depth += 1
            self.captures += 1
        try:
            yield
        finally:
            with self._cond:
                self._writer_depth -= 1
                if not self._writer_depth:
                    self._writer = None
                    self._cond.notify_all()
                if kept:
                    self._readers[me] = self._readers.get(me, 0) + kept

    def holds_shared(self) -> bool:
        """Whether the calling thread holds the shared side now (for tests and diagnostics)."""
        with self._cond:
            return threading.get_ident() in self._readers

    def busy(self) -> bool:
        """Whether a capture holds the lock now (for tests and diagnostics)."""
        with self._cond:
            return self._writer is not None


CAPTURE_LOCK = CaptureLock()

# Not `torch.cuda.Stream()`'s pool (priority 0); on a device with more than two priority levels,
# not the pool of PyTorch's internal high-priority requests (the highest level) either.
CAPTURE_PRIORITY = -1
_capture_streams: dict[int, torch.cuda.Stream] = {}
_capture_streams_lock = threading.Lock()


def capture_stream(device: torch.device | int | None = None) -> torch.cuda.Stream:
    """The stream every capture on `device` (default: the current one) runs on, taken once."""
    index = device if isinstance(device, int) else None if device is None else torch.device(device).index
    if index is None:
        index = torch.cuda.current_device()
    with _capture_streams_lock:
        stream = _capture_streams.get(index)
        if stream is None:
            stream = _capture_streams[index] = torch.cuda.Stream(index, priority=CAPTURE_PRIORITY)
    return stream


def cuda_work() -> contextlib.AbstractContextManager:
    """Held by every CUDA user other than a capture: no graph is captured while it is held."""
    return CAPTURE_LOCK.shared()


@contextlib.contextmanager
def capturing(graph: torch.cuda.CUDAGraph, **kwargs) -> Iterator[None]:
    """`torch.cuda.graph(graph, capture_error_mode="thread_local", **kwargs)` on `capture_stream()`
    under the exclusive lock, the garbage collector paused. On failure the thread's current
    stream is put back (torch's context manager leaves the capture stream current when
    `capture_end` raises), the default CUDA generator is taken out of capture mode
    (`close_rng_capture`) and the error propagates."""
    stream = torch.cuda.current_stream()
    kwargs.setdefault("stream", capture_stream(stream.device))
    with CAPTURE_LOCK.exclusive(), _collector_paused():
        try:
            with torch.cuda.graph(graph, capture_error_mode="thread_local", **kwargs):
                yield
        except BaseException:
            torch.cuda.set_stream(stream)
            try:
                close_rng_capture(stream.device)
            except RuntimeError:   # a device that cannot capture now: the first error says why
                pass
            raise
        finally:
            torch.cuda.set_stream(stream)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Automatic garbage collection off (process-wide) for the block; on again after, where it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def close_rng_capture(device: torch.device) -> None:
    """Take the default CUDA generator of `device` out of capture mode after a failed capture.

    Every capture's begin puts the generator into capture mode and only a successful end takes it
    out; until then each random draw on the GPU anywhere in the process raises. A capture of one
    in-place kernel on a tensor allocated beforehand runs that begin and end once more (it draws
    nothing, so the generator's offset is unchanged). Called under the exclusive lock."""
    with torch.cuda.device(device):
        scratch = torch.zeros(1, device=device)
        with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=capture_stream(device),
                              capture_error_mode="thread_local"):
            scratch.add_(1)
