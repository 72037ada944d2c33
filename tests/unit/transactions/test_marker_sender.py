"""Tests for rafka.transactions.marker_sender: markers retried until written, or given up."""

from __future__ import annotations

from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest
from rafka.protocol.types import TopicPartition
from rafka.transactions.marker_sender import MarkerSender, existing_leaders

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


# ------------------------------------------------------------------ leaders from a Metadata answer

EVENTS_0, EVENTS_1, GONE_0 = (
    TopicPartition("events", 0),
    TopicPartition("events", 1),
    TopicPartition("gone", 0),
)


def metadata_answer(*, briefed: bool) -> MetadataResponse:
    """A broker's answer about ``events`` (partition 0 led by 2, partition 1 leaderless) and an
    unknown ``gone``; ``briefed`` is whether a controller has sent it metadata yet."""
    brokers = (BrokerMetadata(2, "127.0.0.1", "node-2"),) if briefed else ()
    return MetadataResponse(
        brokers,
        2 if briefed else -1,
        (
            TopicMetadata(
                "events",
                (
                    PartitionMetadata(0, 2, 4, (2, 1), (2, 1)),
                    PartitionMetadata(1, -1, 4, (1,), (), error=Errors.LEADER_NOT_AVAILABLE),
                ),
            ),
            TopicMetadata("gone", error=Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ),
    )


def test_a_briefed_broker_gives_leaders_and_leaves_out_the_deleted_topics_partitions() -> None:
    leaders = existing_leaders(
        metadata_answer(briefed=True), frozenset({EVENTS_0, EVENTS_1, GONE_0})
    )
    assert leaders == {EVENTS_0: 2, EVENTS_1: -1}


def test_a_broker_not_yet_briefed_gives_no_leaders_so_no_marker_is_skipped() -> None:
    # Just restarted: its cache is empty, so every topic looks unknown; none of them was deleted.
    assert existing_leaders(metadata_answer(briefed=False), frozenset({EVENTS_0, GONE_0})) is None
