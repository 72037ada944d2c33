"""Tests for DeleteRecords in rafka.actors.replica.partition: the leader moves its log start offset
up to the high watermark, and followers take it from their next fetch (KIP-107)."""

from __future__ import annotations

from rafka.actors.replica.partition import Partition
from rafka.protocol.errors import Errors
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import FetchRequest, FetchResponse
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP, HIGH_WATERMARK
from rafka.protocol.messages.produce import ACKS_ALL
from rafka.protocol.records.builder import build_batch

TOPIC = "events"


def state(leader: int = 0) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(TOPIC, 0, 1, leader, 5, (0, 1), 0, (0, 1))


def leader_with_records(open_log, clock, count: int, replicated: int) -> Partition:
    """Broker 0 leading, ``count`` records written and ``replicated`` of them below the HW."""
    leader = Partition(TOPIC, 0, 0, open_log(), clock)
    leader.make_leader(state())
    leader.append_as_leader(
        build_batch([(None, b"v%d" % i, 1_000 + i) for i in range(count)]), ACKS_ALL, 1
    )
    leader.read(FetchRequest(replicated, replica_id=1))
    assert leader.high_watermark == replicated
    return leader


def test_leader_deletes_records_below_an_offset_up_to_the_high_watermark(open_log, clock) -> None:
    leader = leader_with_records(open_log, clock, 10, 8)
    answer = leader.delete_records(6)
    assert (answer.error, answer.low_watermark) == (Errors.NONE, 6)
    assert leader.list_offsets(EARLIEST_TIMESTAMP, -1).offset == 6
    # A lower offset leaves the start where it is; one past the HW is out of range.
    assert leader.delete_records(3).low_watermark == 6
    refused = leader.delete_records(9)
    assert refused.error is Errors.OFFSET_OUT_OF_RANGE
    assert leader.log.log_start_offset == 6


def test_delete_records_at_the_high_watermark_marker_deletes_everything_replicated(
    open_log, clock
) -> None:
    leader = leader_with_records(open_log, clock, 10, 7)
    answer = leader.delete_records(HIGH_WATERMARK)
    assert (answer.error, answer.low_watermark) == (Errors.NONE, 7)


def test_a_follower_cannot_delete_records(open_log, clock) -> None:
    follower = Partition(TOPIC, 0, 1, open_log(), clock)
    follower.make_follower(state())
    assert follower.delete_records(0).error is Errors.NOT_LEADER_OR_FOLLOWER


def test_follower_takes_the_leaders_log_start_offset_from_a_fetch(open_log, clock) -> None:
    leader = leader_with_records(open_log, clock, 10, 10)
    fetched = leader.read(FetchRequest(0, replica_id=1))
    follower = Partition(TOPIC, 0, 1, open_log("follower-1"), clock)
    follower.make_follower(state())
    follower.append_as_follower(fetched)
    assert follower.log.log_start_offset == 0

    leader.delete_records(4)
    follower.append_as_follower(leader.read(FetchRequest(10, replica_id=1)))
    assert follower.log.log_start_offset == 4
    # A start beyond what the follower holds waits until it has fetched that far.
    follower.append_as_follower(FetchResponse(Errors.NONE, 10, 20, 30))
    assert follower.log.log_start_offset == 4
