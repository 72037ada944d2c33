"""Tests for rafka.clients.records: FutureRecordMetadata's get, callbacks and errbacks, including
thread races."""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest

from rafka.clients.records import FutureRecordMetadata, ProduceRequestResult, RecordMetadata
from rafka.protocol.errors import KafkaTimeoutError, NotEnoughReplicasError
from rafka.protocol.types import TopicPartition

TP = TopicPartition("events", 3)
TS = 1_700_000_000_000


def future(result: ProduceRequestResult, relative: int = 0) -> FutureRecordMetadata:
    return FutureRecordMetadata(result, relative, TS + relative)


class Calls:
    """Records every call it receives."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, *args: object) -> None:
        self.calls.append(args)


# ------------------------------------------------------------------ get


def test_get_returns_base_plus_relative_offset() -> None:
    result = ProduceRequestResult(TP)
    futures = [future(result, relative) for relative in range(3)]
    result.complete(40, None)
    assert [f.get() for f in futures] == [
        RecordMetadata("events", 3, 40 + r, TS + r) for r in range(3)
    ]


def test_get_raises_the_batch_error() -> None:
    result = ProduceRequestResult(TP)
    pending = future(result)
    error = NotEnoughReplicasError("isr too small")
    result.complete(-1, error)
    with pytest.raises(NotEnoughReplicasError) as raised:
        pending.get(timeout=1)
    assert raised.value is error


def test_get_times_out_with_kafka_timeout_error() -> None:
    pending = future(ProduceRequestResult(TP))
    with pytest.raises(KafkaTimeoutError, match="events-3"):
        pending.get(timeout=0.01)
    assert not pending.is_done


def test_unknown_base_offset_reports_offset_minus_one() -> None:
    # acks=0: the batch completes without an offset.
    result = ProduceRequestResult(TP)
    pending = future(result, relative=5)
    result.complete(-1, None)
    assert pending.get().offset == -1


def test_state_properties_before_and_after_success() -> None:
    result = ProduceRequestResult(TP)
    pending = future(result, 1)
    assert (pending.is_done, pending.succeeded(), pending.failed(), pending.value) == (
        False,
        False,
        False,
        None,
    )
    result.complete(10, None)
    assert (pending.is_done, pending.succeeded(), pending.failed(), pending.exception) == (
        True,
        True,
        False,
        None,
    )
    assert pending.value == RecordMetadata("events", 3, 11, TS + 1)


def test_state_properties_after_failure() -> None:
    result = ProduceRequestResult(TP)
    pending = future(result)
    error = KafkaTimeoutError("expired in accumulator")
    result.complete(-1, error)
    assert (pending.succeeded(), pending.failed(), pending.exception, pending.value) == (
        False,
        True,
        error,
        None,
    )


# ------------------------------------------------------------------ callbacks and errbacks


def test_callback_added_before_completion_runs_once_with_args_and_metadata() -> None:
    result = ProduceRequestResult(TP)
    pending = future(result, 2)
    callback, errback = Calls(), Calls()
    assert pending.add_callback(callback, "tag", 7) is pending
    pending.add_errback(errback)
    assert callback.calls == []
    result.complete(100, None)
    assert callback.calls == [("tag", 7, RecordMetadata("events", 3, 102, TS + 2))]
    assert errback.calls == []


def test_errback_added_before_completion_runs_once_with_the_error() -> None:
    result = ProduceRequestResult(TP)
    pending = future(result)
    callback, errback = Calls(), Calls()
    pending.add_callback(callback).add_errback(errback, "ctx")
    error = NotEnoughReplicasError("no")
    result.complete(-1, error)
    assert errback.calls == [("ctx", error)]
    assert callback.calls == []


def test_callbacks_added_after_completion_run_at_once() -> None:
    result = ProduceRequestResult(TP)
    pending = future(result)
    result.complete(5, None)
    callback, errback = Calls(), Calls()
    pending.add_callback(callback)
    pending.add_errback(errback)
    assert callback.calls == [(RecordMetadata("events", 3, 5, TS),)]
    assert errback.calls == []


def test_errback_added_after_failure_runs_at_once() -> None:
    result = ProduceRequestResult(TP)
    pending = future(result)
    error = KafkaTimeoutError("late")
    result.complete(-1, error)
    errback = Calls()
    pending.add_errback(errback)
    assert errback.calls == [(error,)]


def test_callbacks_run_in_registration_order_for_each_record_of_the_batch() -> None:
    result = ProduceRequestResult(TP)
    order: list[tuple[int, str]] = []
    futures = [future(result, r) for r in range(3)]
    for f in futures:
        f.add_callback(lambda name, md: order.append((md.offset, name)), "first")
        f.add_callback(lambda name, md: order.append((md.offset, name)), "second")
    result.complete(0, None)
    assert sorted(order) == [(o, n) for o in range(3) for n in ("first", "second")]
    for offset in range(3):
        assert [n for o, n in order if o == offset] == ["first", "second"]


def test_raising_callback_does_not_stop_the_others_or_the_completer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # complete() runs on the producer's sender thread: a user callback must not break it.
    result = ProduceRequestResult(TP)
    first, second = future(result, 0), future(result, 1)
    later = Calls()

    def broken(_: RecordMetadata) -> None:
        raise RuntimeError("user bug")

    first.add_callback(broken).add_callback(later)
    second.add_callback(later)
    result.complete(10, None)
    assert [md.offset for (md,) in later.calls] == [10, 11]
    assert first.get() == RecordMetadata("events", 3, 10, TS)
    first.add_callback(broken)  # after completion too: the caller is not hit by the error
    assert [r.exc_info[1].args for r in caplog.records if r.exc_info and r.exc_info[1]] == [
        ("user bug",),
        ("user bug",),
    ]


# ------------------------------------------------------------------ thread races


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_callback_runs_exactly_once_while_threads_race_completion(seed: int) -> None:
    rng = random.Random(seed)
    result = ProduceRequestResult(TP)
    futures = [future(result, r) for r in range(5)]
    runs: Counter[int] = Counter()
    runs_lock = threading.Lock()
    adders, per_adder = 8, 300
    plans = [[rng.randrange(len(futures)) for _ in range(per_adder)] for _ in range(adders)]
    start = threading.Barrier(adders + 1)

    def record(callback_id: int, metadata: RecordMetadata) -> None:
        assert metadata.offset >= 1000
        with runs_lock:
            runs[callback_id] += 1

    def add(thread: int) -> None:
        start.wait()
        for i, target in enumerate(plans[thread]):
            futures[target].add_callback(record, thread * per_adder + i)

    def complete() -> None:
        start.wait()
        result.complete(1000, None)

    threads = [threading.Thread(target=add, args=(t,)) for t in range(adders)] + [
        threading.Thread(target=complete)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert len(runs) == adders * per_adder
    assert set(runs.values()) == {1}
