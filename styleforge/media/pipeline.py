"""The streaming pipeline: source → decode workers → engine thread → encode workers → sink.

`stream(tasks, decode, engine, encode)` yields one `Item` per task, in task order, while up to
`depth` items wait between each pair of stages: a feeder thread submits decodes to a thread pool
and queues their futures (a full queue blocks the feeder, so memory stays bounded on any folder
or video length); one engine thread takes the decoded items in order, batches consecutive
same-shape items that are already decoded (never waiting for a batch to fill), runs the engine
and submits each item's encode; the caller's thread takes the encodes' futures in order. An item
whose decode, stylization or encode raises carries the error and the rest goes on; an exception
from the task iterator itself (a broken video stream) ends the stream and is re-raised.
This module knows nothing about files, codecs or CUDA: those are the callables it is given
(`media.engine_stage`, `media.images`, `media.video`).
"""
from __future__ import annotations

import os
import queue
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

_END = object()
_POLL_S = 0.1


@dataclass
class Item:
    index: int
    task: Any                        # what the source produced: a path, a frame, …
    pixels: Any = None               # decoded content (uint8 H×W×3 array, or what the engine takes)
    meta: Any = None                 # what decode hands to encode (alpha, ICC, timestamps, …)
    out: Any = None                  # the engine's result for this item
    result: Any = None               # what encode returned (e.g. the path written)
    error: str | None = None
    cause: BaseException | None = field(default=None, repr=False)   # what raised `error` (`failed`)
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0

    @property
    def shape(self) -> tuple | None:
        return getattr(self.pixels, "shape", None)


class _Failure:
    def __init__(self, exc: BaseException):
        self.exc = exc


def default_workers() -> int:
    return max(1, min(16, os.cpu_count() or 1))


def error_text(task: Any, exc: BaseException) -> str:
    """One line: a ValueError's message names its file already; anything else gets the task."""
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return f"{task}: {type(exc).__name__}: {exc}"


def failed(item: Item, text: str, exc: BaseException) -> None:
    """Mark `item` failed with `text`, keeping `exc` as its cause (a caller chains it: a CUDA error's
    traceback says which call raised). The traceback's frames lose their locals: they would keep
    the failed batch's tensors — on an out-of-memory error, the memory the next batch needs."""
    item.error, item.cause = text, exc
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__


@dataclass
class Stats:
    """What a run did, for tests and benchmarks: batches, items, the largest backlog seen."""
    items: int = 0
    batches: int = 0
    peak_in_flight: int = 0
    _in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)

    def leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def stream(tasks: Iterable[Any], decode: Callable[[Item], None],
           engine: Callable[[list[Item]], None] | None,
           encode: Callable[[Item], None] | None, *, decode_workers: int | None = None,
           encode_workers: int | None = None, depth: int = 8, max_batch: int = 1,
           stats: Stats | None = None) -> Iterator[Item]:
    """Items in task order, each decoded, stylized (`engine` fills `item.out` for a batch) and
    encoded; `decode`/`encode` fill the item's fields and may raise to fail that item alone."""
    if depth < 1 or max_batch < 1:
        raise ValueError(f"depth and max_batch must be ≥ 1, got {depth} and {max_batch}")
    stats = stats if stats is not None else Stats()
    stop = threading.Event()
    decoded: queue.Queue = queue.Queue(maxsize=depth)
    finished: queue.Queue = queue.Queue(maxsize=depth)
    decoders = ThreadPoolExecutor(decode_workers or default_workers(), thread_name_prefix="sf-decode")
    encoders = ThreadPoolExecutor(encode_workers or default_workers(), thread_name_prefix="sf-encode")

    def put(q: queue.Queue, value: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(value, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def run_decode(item: Item) -> Item:
        try:
            decode(item)
        except Exception as exc:
            failed(item, error_text(item.task, exc), exc)
        return item

    def feed() -> None:
        try:
            for index, task in enumerate(tasks):
                item = Item(index, task)
                stats.enter()
                if not put(decoded, decoders.submit(run_decode, item)):
                    return
        except Exception as exc:
            put(decoded, _Failure(exc))
            return
        put(decoded, _END)

    def run_encode(item: Item) -> Item:
        if item.error is None and encode is not None:
            try:
                encode(item)
            except Exception as exc:
                failed(item, error_text(item.task, exc), exc)
        item.seconds = time.perf_counter() - item.started
        return item

    pending: list = []   # the last batch issued, with its settle callable, encodes not yet submitted

    def hand_over() -> bool:
        """Submit the pending batch's encodes (after its settle: the engine's late checks)."""
        if not pending:
            return True
        batch, settle = pending.pop()
        if settle is not None:
            try:
                settle()
            except Exception as exc:
                for item in batch:
                    failed(item, f"{item.task}: stylization failed ({type(exc).__name__}: {exc})", exc)
        for item in batch:
            if not put(finished, encoders.submit(run_encode, item)):
                return False
        return True

    def flush(batch: list[Item]) -> bool:
        if not batch:
            return True
        stats.batches += 1
        settle = None
        if engine is not None:
            try:
                settle = engine(batch)
            except Exception as exc:  # e.g. out of memory: this batch fails, the next may fit
                hint = "; try --max-side or a smaller --batch-size" if "memory" in str(exc).lower() else ""
                for item in batch:
                    failed(item, f"{item.task}: stylization failed ({type(exc).__name__}: {exc}){hint}", exc)
        else:
            for item in batch:
                item.out = item.pixels
        # The engine may return before the GPU is done: the previous batch is handed over now, while
        # this one computes; this one waits for the next batch (or for the input to pause).
        if not hand_over():
            return False
        pending.append((list(batch), settle))
        batch.clear()
        return settle is not None or hand_over()   # nothing to check late: hand it over now

    def next_entry() -> Any:
        try:
            return decoded.get_nowait()
        except queue.Empty:
            pass
        if not hand_over():   # nothing else to issue yet: let the encoders have the last batch
            return None
        return _get(decoded, stop)

    def stylize() -> None:
        carry = None
        try:
            while not stop.is_set():
                entry = carry if carry is not None else next_entry()
                carry = None
                if entry is _END or isinstance(entry, _Failure) or entry is None:
                    if not hand_over():
                        return
                    if entry is not None:
                        put(finished, entry)
                    return
                if isinstance(entry, Future) and not entry.done() and not hand_over():
                    return   # the GPU's last batch goes to the encoders while this decode finishes
                item = entry.result()
                if item.error is not None:
                    if not hand_over():
                        return
                    put(finished, _done(run_encode(item)))
                    continue
                batch = [item]
                while max_batch > 1 and len(batch) < max_batch:
                    try:
                        nxt = decoded.get_nowait()
                    except queue.Empty:
                        break
                    if (isinstance(nxt, Future) and nxt.done() and nxt.result().error is None
                            and nxt.result().shape == item.shape):
                        batch.append(nxt.result())
                    else:
                        carry = nxt
                        break
                if len(batch) < max_batch:
                    # Run singly: the fused engine captures one graph per (N, H, W), so batches of
                    # every size in 1..max_batch would each pay a capture.
                    for single in batch:
                        if not flush([single]):
                            return
                elif not flush(batch):
                    return
        except BaseException as exc:
            put(finished, _Failure(exc))

    threads = [threading.Thread(target=feed, name="sf-feed", daemon=True),
               threading.Thread(target=stylize, name="sf-engine", daemon=True)]
    for thread in threads:
        thread.start()
    try:
        while True:
            entry = _get(finished, None)
            if entry is _END:
                return
            if isinstance(entry, _Failure):
                raise entry.exc
            item = entry.result()
            stats.items += 1
            stats.leave()
            yield item
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        decoders.shutdown(wait=True, cancel_futures=True)
        encoders.shutdown(wait=True, cancel_futures=True)


def _done(item: Item) -> Future:
    future: Future = Future()
    future.set_result(item)
    return future


def _get(q: queue.Queue, stop: threading.Event | None) -> Any:
    while stop is None or not stop.is_set():
        try:
            return q.get(timeout=_POLL_S)
        except queue.Empty:
            continue
    return None
