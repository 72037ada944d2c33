"""Tests for rafka.transactions.marker_sender: markers retried until written, or given up."""

from __future__ import annotations

from rafka.protocol.errors import Errors
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest
from rafka.protocol.types import TopicPartition
from rafka.transactions.marker_sender import MarkerSender

from .conftest import FakeChannel, run

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
REQUEST = WriteTxnMarkersRequest(5, 2, True, 7)


def sender(channel: FakeChannel) -> MarkerSender:
    return MarkerSender(channel, backoff_s=0.001, max_backoff_s=0.002)


def test_retriable_answers_and_leader_moves_are_retried_until_written() -> None:
    channel = FakeChannel(
        leader_of={TP0: -1},
        answers={TP1: [Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS]},
        metadata_down=1,
    )

    async def scenario() -> bool:
        async def move() -> None:
            channel.leader_of[TP0] = 2

        done = sender(channel).send([TP0, TP1], REQUEST, lambda: True)
        await move()
        return await done

    assert run(scenario) is True
    assert sorted((leader, tp) for leader, tp, _ in channel.written) == [(1, TP1), (2, TP0)]
    assert channel.attempts.count(TP1) == 3


def test_an_unknown_partition_still_in_the_metadata_is_retried_and_a_deleted_one_is_done() -> None:
    channel = FakeChannel(answers={TP0: [Errors.UNKNOWN_TOPIC_OR_PARTITION]})

    async def scenario() -> bool:
        return await sender(channel).send([TP0], REQUEST, lambda: True)

    assert run(scenario) is True
    assert channel.attempts == [TP0, TP0]
    deleted = FakeChannel(deleted={"orders"})

    async def gone() -> bool:
        return await sender(deleted).send([TP0, TP1], REQUEST, lambda: True)

    assert run(gone) is True
    assert deleted.attempts == []


def test_a_fenced_answer_gives_the_markers_up() -> None:
    for fenced in (Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED):
        channel = FakeChannel(answers={TP0: [fenced]})

        async def scenario(channel: FakeChannel = channel) -> bool:
            return await sender(channel).send([TP0, TP1], REQUEST, lambda: True)

        assert run(scenario) is False


def test_a_coordinator_that_lost_the_transaction_stops_retrying() -> None:
    channel = FakeChannel(answers={TP0: [Errors.NOT_LEADER_OR_FOLLOWER] * 100})
    checks = iter([True, True, False])

    async def scenario() -> bool:
        return await sender(channel).send([TP0], REQUEST, lambda: next(checks))

    assert run(scenario) is False
    assert channel.attempts == [TP0, TP0]


def test_a_write_that_raises_is_retried_like_an_error_answer() -> None:
    class Flaky(FakeChannel):
        raised = False

        async def write(
            self, leader: int, partition: TopicPartition, request: WriteTxnMarkersRequest
        ) -> Errors:
            if not self.raised:
                self.raised = True
                raise RuntimeError("a bug at the partition")
            return await super().write(leader, partition, request)

    channel = Flaky()

    async def scenario() -> bool:
        return await sender(channel).send([TP0], REQUEST, lambda: True)

    assert run(scenario) is True
    assert [tp for _, tp, _ in channel.written] == [TP0]
