"""Tests for the console consumer's record loop (rafka.cli.console.records) over a scripted
consumer: it never takes more records than it will print, so a group commits only those."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.cli.console import JOIN_WAIT_S, records
from rafka.cli.main import main
from rafka.clients.records import ConsumerRecord
from rafka.protocol.types import TopicPartition

TP = TopicPartition("events", 0)


def record(offset: int) -> ConsumerRecord:
    return ConsumerRecord("events", 0, offset, 0, 0, None, b"v%d" % offset, [])


class ScriptedConsumer:
    """Answers each poll with the next buffered records, at most ``max_records`` of them, and
    notes how many each poll asked for. The first ``joining_polls`` polls (a group join) return
    nothing and leave it without partitions; each poll takes 0.1 s of ``now``."""

    def __init__(self, offsets: list[int], joining_polls: int = 0) -> None:
        self.buffered = [record(o) for o in offsets]
        self.asked: list[int | None] = []
        self.joining_polls = joining_polls
        self.now = 0.0

    def assignment(self) -> set[TopicPartition]:
        return set() if self.joining_polls > 0 else {TP}

    def clock(self) -> float:
        return self.now

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, Any]:
        self.now += 0.1
        if self.joining_polls > 0:
            self.joining_polls -= 1
            return {}
        self.asked.append(max_records)
        take = len(self.buffered) if max_records is None else max_records
        taken, self.buffered = self.buffered[:take], self.buffered[take:]
        return {TP: taken} if taken else {}


def test_max_messages_bounds_every_poll_so_nothing_unprinted_is_taken() -> None:
    consumer = ScriptedConsumer(list(range(10)))
    got = [r.offset for r in records(consumer, max_messages=3, timeout_ms=None)]  # type: ignore[arg-type]
    assert got == [0, 1, 2]
    assert consumer.asked == [3]
    assert [r.offset for r in consumer.buffered] == list(range(3, 10))


def test_iteration_ends_after_the_timeout_without_records() -> None:
    consumer = ScriptedConsumer([0, 1])
    got = [r.offset for r in records(consumer, max_messages=None, timeout_ms=0)]  # type: ignore[arg-type]
    assert got == [0, 1]
    assert consumer.asked[0] is None


@pytest.mark.parametrize("max_messages", [1, 2, 5])
def test_exactly_max_messages_records_come_out_when_more_are_there(max_messages: int) -> None:
    consumer = ScriptedConsumer(list(range(5)))
    got = list(records(consumer, max_messages=max_messages, timeout_ms=None))  # type: ignore[arg-type]
    assert len(got) == max_messages


def test_the_timeout_counts_only_once_the_consumer_has_partitions() -> None:
    consumer = ScriptedConsumer([0, 1], joining_polls=30)  # 3 s of joining, then the records
    got = records(consumer, None, timeout_ms=500, clock=consumer.clock)  # type: ignore[arg-type]
    assert [r.offset for r in got] == [0, 1]
    assert consumer.now < 4


def test_a_consumer_that_gets_no_partitions_still_times_out_after_the_join_wait() -> None:
    consumer = ScriptedConsumer([], joining_polls=10**6)
    got = records(consumer, None, timeout_ms=500, clock=consumer.clock)  # type: ignore[arg-type]
    assert list(got) == []
    assert JOIN_WAIT_S < consumer.now < JOIN_WAIT_S + 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--group", "g", "--partition", "0"], "--group and --partition cannot be used together"),
        (["--offset", "3"], "--offset needs --partition"),
    ],
)
def test_conflicting_consume_options_fail_in_one_line_before_connecting(
    options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["consume", "--topic", "events", *options]) == 1
    assert capsys.readouterr().err == f"Error: {message}\n"
