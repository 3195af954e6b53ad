"""The streaming pipeline alone (`styleforge.media.pipeline.stream`): order, failures, bounds,
batching, with trivial decode/engine/encode callables so every test runs in milliseconds."""
import threading
import time

import numpy as np
import pytest

from styleforge.media.pipeline import Stats, stream


def decode_number(item):
    if item.task == "bad":
        raise ValueError("bad: not a number")
    item.pixels = np.full((2, 3 if item.task % 2 else 2, 3), item.task % 256, np.uint8)


def plus_one(batch):
    for item in batch:
        item.out = item.pixels + 1


def keep(item):
    item.result = int(item.out[0, 0, 0])


def test_order_kept_with_random_stage_delays():
    rng = np.random.default_rng(0)
    delays = rng.uniform(0, 0.003, 64)

    def slow_decode(item):
        time.sleep(delays[item.task])
        decode_number(item)

    def slow_encode(item):
        time.sleep(delays[::-1][item.index])
        keep(item)
    items = list(stream(range(64), slow_decode, plus_one, slow_encode, decode_workers=4,
                        encode_workers=4, depth=4))
    assert [item.index for item in items] == list(range(64))
    assert [item.result for item in items] == [(n % 256) + 1 for n in range(64)]


def test_bad_item_fails_alone_in_each_stage():
    def engine(batch):
        if any(item.task == 5 for item in batch):
            raise RuntimeError("CUDA out of memory")
        plus_one(batch)

    def encode(item):
        if item.task == 7:
            raise OSError("disk full")
        keep(item)
    tasks = [0, 1, "bad", 3, 4, 5, 6, 7, 8]
    items = list(stream(tasks, decode_number, engine, encode, depth=2))
    errors = {item.task: item.error for item in items if item.error}
    assert set(errors) == {"bad", 5, 7}
    assert errors["bad"] == "bad: not a number"
    assert "stylization failed" in errors[5] and "--max-side" in errors[5]
    assert errors[7] == "7: OSError: disk full"
    assert [item.result for item in items if not item.error] == [1, 2, 4, 5, 7, 9]


def test_source_error_ends_the_stream_and_is_raised():
    def broken():
        yield 0
        yield 1
        raise ValueError("stream broke")
    seen = []
    with pytest.raises(ValueError, match="stream broke"):
        for item in stream(broken(), decode_number, plus_one, keep):
            seen.append(item.result)
    assert seen == [1, 2]


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_memory_bounded_by_depth_on_a_long_source():
    stats = Stats()
    produced = []

    def source():
        for n in range(3000):
            produced.append(n)
            yield n
    consumed = 0
    for item in stream(source(), decode_number, plus_one, keep, decode_workers=2,
                       encode_workers=2, depth=4, max_batch=3, stats=stats):
        consumed += 1
        # The source never runs further ahead than the queues allow.
        assert len(produced) - consumed <= 2 * 4 + 3 + 4
        if consumed % 500 == 0:
            time.sleep(0.01)
    assert consumed == stats.items == 3000
    assert stats.peak_in_flight <= 2 * 4 + 3 + 4


def test_batches_are_same_shape_and_full_or_single():
    sizes = []

    def engine(batch):
        assert len({item.shape for item in batch}) == 1
        sizes.append(len(batch))
        plus_one(batch)
    tasks = [0, 2, 4, 6, 8, 10, 1, 3, 12]

    def slow_first(item):
        if item.index == 0:
            time.sleep(0.05)   # lets the rest decode, so the engine finds full batches waiting
        decode_number(item)
    items = list(stream(tasks, slow_first, engine, keep, decode_workers=4, depth=16, max_batch=3))
    assert [item.result for item in items] == [t + 1 for t in tasks]
    assert set(sizes) <= {1, 3} and 3 in sizes and sum(sizes) == len(tasks)


def test_consumer_stopping_early_ends_the_threads():
    before = threading.active_count()
    for item in stream(range(10_000), decode_number, plus_one, keep, depth=2):
        if item.index == 3:
            break
    time.sleep(0.05)
    assert threading.active_count() <= before
