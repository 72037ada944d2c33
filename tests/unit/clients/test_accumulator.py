"""Tests for rafka.clients.accumulator: per-partition producer batches, linger, retries and buffer
memory."""

from __future__ import annotations

import random
import threading
import time

import pytest

from rafka.clients.accumulator import ProducerBatch, RecordAccumulator
from rafka.protocol.errors import KafkaTimeoutError
from rafka.protocol.records.batch import HEADER_SIZE, decode_records, iter_batches
from rafka.protocol.records.builder import RECORD_OVERHEAD
from rafka.protocol.records.compression import Compression
from rafka.protocol.types import TopicPartition

TP0, TP1, TP2 = (TopicPartition("events", p) for p in range(3))
VALUE = b"v" * 10
RECORD = RECORD_OVERHEAD + len(VALUE)  # estimated size of one keyless record of VALUE
LONG_LINGER_MS = 60_000
MAX_BLOCK_S = 0.05
BIG = 1 << 30
BATCH = 1_000


def accumulator(
    batch_size: int = 16_384, linger_ms: int = LONG_LINGER_MS, buffer_memory: int = BIG
) -> RecordAccumulator:
    return RecordAccumulator(batch_size, linger_ms, buffer_memory, Compression.NONE)


def append(
    acc: RecordAccumulator, tp: TopicPartition = TP0, value: bytes = VALUE, max_block_s: float = 5.0
):
    return acc.append(tp, 1_000, None, value, [], max_block_s)


def drain(
    acc: RecordAccumulator, now: float | None = None, busy: set[TopicPartition] | None = None
) -> list[ProducerBatch]:
    return acc.ready(time.monotonic() if now is None else now, busy or set())[0]


def later() -> float:
    """A time past every linger: open batches become sendable too."""
    return time.monotonic() + 2 * LONG_LINGER_MS / 1000


def values_of(batch: ProducerBatch) -> list[bytes]:
    data = batch.encoded()
    values: list[bytes] = []
    for position, header in iter_batches(data):
        for r in decode_records(data, position, header):
            assert r.value is not None  # every record these tests append has a value
            values.append(r.value)
    return values


# ------------------------------------------------------------------ appending and closing


def test_records_join_the_open_batch_of_their_partition() -> None:
    acc = accumulator()
    assert [append(acc, tp)[1] for tp in (TP0, TP0, TP1, TP0)] == [False] * 4
    assert sorted(b.topic_partition for b in acc.incomplete) == [TP0, TP1]


def test_full_batch_closes_as_soon_as_it_is_full() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + 3 * RECORD)
    assert [append(acc)[1] for _ in range(4)] == [False, False, True, False]
    (first,) = drain(acc)
    assert first.closed
    assert first.builder.record_count == 3
    assert len(acc.incomplete) == 2


def test_record_that_does_not_fit_closes_the_batch_and_opens_another() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + 100)
    append(acc)
    assert append(acc, value=b"x" * 80)[1] is True
    (full,) = drain(acc)
    assert values_of(full) == [VALUE]
    assert drain(acc) == []  # the new batch is open and lingering


def test_record_larger_than_batch_size_travels_alone() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + 50)
    closed = [append(acc, value=v)[1] for v in (b"a", b"x" * 500, b"b")]
    assert closed == [False, True, False]
    assert [values_of(b) for b in drain(acc)] == [[b"a"]]
    assert [values_of(b) for b in drain(acc)] == [[b"x" * 500]]


def test_record_offsets_are_relative_within_each_batch() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + 2 * RECORD)
    futures = [append(acc)[0] for _ in range(3)]
    (first,) = drain(acc)
    first.result.complete(100, None)
    (second,) = drain(acc, now=later())
    second.result.complete(500, None)
    assert [f.get(timeout=1).offset for f in futures] == [100, 101, 500]


# ------------------------------------------------------------------ ready


def test_ready_drains_closed_batches_without_waiting_for_linger() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + RECORD)
    append(acc, value=b"a")
    append(acc, value=b"b")
    oldest = min(acc.incomplete, key=lambda b: b.created)
    assert [values_of(b) for b in drain(acc, now=oldest.created)] == [[b"a"]]


def test_ready_drains_open_batches_once_older_than_linger() -> None:
    acc = accumulator(linger_ms=1_000)
    append(acc)
    (batch,) = acc.incomplete
    drained, sleep_s = acc.ready(batch.created + 0.25, set())
    assert drained == []
    assert sleep_s == pytest.approx(0.75)
    assert drain(acc, now=batch.created + 1.0) == [batch]
    assert batch.closed
    assert not acc.has_unsent()


def test_drained_batch_takes_no_more_records() -> None:
    acc = accumulator(linger_ms=0)
    append(acc, value=b"a")
    (batch,) = drain(acc)
    append(acc, value=b"b")
    assert values_of(batch) == [b"a"]
    assert len(acc.incomplete) == 2


def test_ready_drains_everything_when_flushing() -> None:
    acc = accumulator()
    for tp in (TP0, TP1):
        append(acc, tp)
    assert drain(acc) == []
    acc.flushing = 1
    assert sorted(b.topic_partition for b in drain(acc)) == [TP0, TP1]


def test_ready_drains_only_the_oldest_batch_of_each_partition() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + RECORD)
    for value in (b"a", b"b", b"c"):
        append(acc, value=value)
    assert [values_of(b) for b in drain(acc)] == [[b"a"]]
    assert [values_of(b) for b in drain(acc)] == [[b"b"]]
    assert drain(acc) == []  # "c" is still open


def test_ready_skips_busy_partitions() -> None:
    acc = accumulator()
    for tp in (TP0, TP1, TP2):
        append(acc, tp)
    now = later()
    assert sorted(b.topic_partition for b in drain(acc, now=now, busy={TP1})) == [TP0, TP2]
    assert [b.topic_partition for b in drain(acc, now=now)] == [TP1]


def test_ready_holds_a_batch_until_its_retry_time() -> None:
    acc = accumulator(linger_ms=10_000)
    append(acc)
    (batch,) = drain(acc, now=later())
    now = time.monotonic()
    acc.reenqueue(batch, retry_at=now + 0.5)
    drained, sleep_s = acc.ready(now, set())
    assert drained == []
    assert sleep_s == pytest.approx(0.5)  # the sender wakes for the retry, not the longer linger
    assert drain(acc, now=now + 0.5) == [batch]


def test_reenqueue_puts_the_batch_back_in_front_keeping_order() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + RECORD)
    for value in (b"a", b"b", b"c"):
        append(acc, value=value)
    (first,) = drain(acc)
    encoded = first.encoded()
    acc.reenqueue(first, retry_at=0.0)
    append(acc, value=b"d")
    now = later()
    order = [values_of(b) for _ in range(5) for b in drain(acc, now=now)]
    assert order == [[b"a"], [b"b"], [b"c"], [b"d"]]
    assert first.encoded() is encoded  # a retry resends the very same bytes


def test_reenqueued_batch_is_not_appended_to() -> None:
    acc = accumulator(linger_ms=0)
    append(acc, value=b"a")
    (batch,) = drain(acc)
    batch.encoded()
    acc.reenqueue(batch, retry_at=0.0)
    append(acc, value=b"b")
    assert values_of(batch) == [b"a"]
    assert len(acc.incomplete) == 2


# ------------------------------------------------------------------ buffer memory


def test_full_buffer_blocks_new_batches_then_times_out() -> None:
    acc = accumulator(batch_size=BATCH, buffer_memory=BATCH)
    append(acc, TP0)
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="events-1"):
        append(acc, TP1, max_block_s=MAX_BLOCK_S)
    assert time.monotonic() - started >= MAX_BLOCK_S * 0.9
    assert [b.topic_partition for b in acc.incomplete] == [TP0]


def test_full_buffer_does_not_block_appends_to_an_open_batch() -> None:
    acc = accumulator(batch_size=BATCH, buffer_memory=BATCH)
    append(acc, max_block_s=MAX_BLOCK_S)
    assert append(acc, max_block_s=MAX_BLOCK_S)[1] is False
    assert len(acc.incomplete) == 1


def test_each_batch_holds_batch_size_of_buffer_memory_however_small() -> None:
    # Kafka's BufferPool hands out batch_size chunks: two tiny batches fill a two-chunk buffer.
    acc = accumulator(batch_size=BATCH, buffer_memory=2 * BATCH)
    append(acc, TP0)
    append(acc, TP1)
    with pytest.raises(KafkaTimeoutError):
        append(acc, TP2, max_block_s=MAX_BLOCK_S)


@pytest.mark.parametrize("seed", [5, 11])
def test_released_batches_give_back_exactly_their_memory(seed: int) -> None:
    rng = random.Random(seed)
    acc = accumulator(batch_size=BATCH, linger_ms=0, buffer_memory=2 * BATCH)
    for _ in range(100):  # normal and oversized batches, each released once sent
        append(
            acc,
            rng.choice((TP0, TP1)),
            value=b"x" * rng.choice((10, 3 * BATCH)),
            max_block_s=MAX_BLOCK_S,
        )
        for batch in drain(acc):
            acc.release(batch)
        assert not acc.incomplete
    append(acc, TP0)
    append(acc, TP1)
    with pytest.raises(KafkaTimeoutError):
        append(acc, TP2, max_block_s=MAX_BLOCK_S)


class SignallingCondition(threading.Condition):
    """A Condition that tells the test when a thread has started waiting on it."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_blocked_append_proceeds_when_a_batch_is_released() -> None:
    acc = accumulator(batch_size=BATCH, linger_ms=0, buffer_memory=BATCH)
    acc._room = room = SignallingCondition(acc._lock)
    append(acc, TP0)
    (inflight,) = drain(acc)
    outcome: list[object] = []
    blocked = threading.Thread(target=lambda: outcome.append(append(acc, TP1, max_block_s=30.0)))
    blocked.start()
    assert room.waiting.wait(10)
    assert outcome == []  # it cannot finish while the buffer is full
    acc.release(inflight)
    blocked.join(10)
    assert not blocked.is_alive()
    assert len(outcome) == 1
    assert [b.topic_partition for b in acc.incomplete] == [TP1]


# ------------------------------------------------------------------ bookkeeping


def test_pending_results_are_those_of_unreleased_batches() -> None:
    acc = accumulator()
    for tp in (TP0, TP1):
        append(acc, tp)
    batches = {b.topic_partition: b for b in drain(acc, now=later())}
    assert {r.topic_partition for r in acc.pending_results()} == {TP0, TP1}
    acc.release(batches[TP0])
    assert acc.pending_results() == [batches[TP1].result]
    assert not acc.has_unsent()


def test_concurrent_appends_lose_no_record() -> None:
    acc = accumulator(batch_size=HEADER_SIZE + 5 * RECORD)
    rng = random.Random(99)
    plans = [
        [(rng.choice((TP0, TP1, TP2)), b"%02d-%03d" % (t, i)) for i in range(200)] for t in range(4)
    ]
    start = threading.Barrier(len(plans))

    def run(plan: list[tuple[TopicPartition, bytes]]) -> None:
        start.wait()
        for tp, value in plan:
            append(acc, tp, value=value)

    threads = [threading.Thread(target=run, args=(plan,)) for plan in plans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    acc.flushing = 1
    got: dict[TopicPartition, list[bytes]] = {TP0: [], TP1: [], TP2: []}
    while acc.has_unsent():  # flushing: every call drains one batch per partition
        for batch in drain(acc):
            got[batch.topic_partition].extend(values_of(batch))
    for tp, values in got.items():
        assert sorted(values) == sorted(v for plan in plans for p, v in plan if p == tp)
        for t in range(len(plans)):  # each thread's records keep their order within a partition
            mine = [v for v in values if v.startswith(b"%02d-" % t)]
            assert mine == sorted(mine)
