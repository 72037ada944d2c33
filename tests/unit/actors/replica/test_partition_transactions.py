"""The partition's part in idempotence and transactions: duplicate produce answers, transaction
markers, the LSO bound of read_committed fetches and list_offsets, and their aborted lists."""

from __future__ import annotations

import pytest

from rafka.actors.replica.partition import Partition
from rafka.protocol.errors import Errors, NotLeaderOrFollowerError, RafkaError
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import (
    READ_COMMITTED,
    AbortedTransaction,
    FetchRequest,
)
from rafka.protocol.messages.offsets import LATEST_TIMESTAMP
from rafka.protocol.messages.produce import ACKS_ALL, ACKS_LEADER
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest
from rafka.protocol.records.batch import iter_batches
from rafka.protocol.records.builder import RecordBatchBuilder, build_batch

PID = 31
STATE = LeaderAndIsrPartitionState("events", 0, 1, 0, 5, (0, 1), 3, (0, 1))


def batch(seq: int, transactional: bool = True, pid: int = PID) -> bytes:
    """One record from producer ``pid`` at epoch 0 and sequence ``seq``."""
    builder = RecordBatchBuilder(
        producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=transactional
    )
    builder.append(1, None, b"v%d" % seq)
    return builder.build()


def marker(committed: bool) -> WriteTxnMarkersRequest:
    return WriteTxnMarkersRequest(PID, 0, committed, coordinator_epoch=1)


def caught_up(leader: Partition) -> None:
    """Follower 1 fetches at the leader's LEO, so the HW reaches it."""
    leader.read(FetchRequest(leader.log.log_end_offset, replica_id=1))


def committed_offsets(leader: Partition, offset: int = 0) -> list[int]:
    """Base offsets of every batch a read_committed consumer reads from ``offset``."""
    found: list[int] = []
    while True:
        response = leader.read(FetchRequest(offset, isolation_level=READ_COMMITTED))
        headers = [header for _, header in iter_batches(response.records)]
        if not headers:
            return found
        found.extend(header.base_offset for header in headers)
        offset = headers[-1].next_offset


@pytest.fixture
def leader(open_log, clock) -> Partition:
    partition = Partition("events", 0, 0, open_log("leader"), clock)
    partition.make_leader(STATE)
    return partition


def test_a_duplicate_produce_is_answered_with_the_original_base_offset(leader):
    leader.append_as_leader(build_batch([(None, b"x", 1)]), ACKS_LEADER, 1)
    first = leader.append_as_leader(batch(0, transactional=False), ACKS_ALL, 1)
    again = leader.append_as_leader(batch(0, transactional=False), ACKS_ALL, 1)
    assert again.duplicate and leader.log.log_end_offset == 2
    assert leader.produce_response(again).base_offset == first.first_offset == 1
    # acks=all still waits for the original batch to be replicated.
    assert leader.produce_outcome(leader.required_offset(again, ACKS_ALL), 1) is None
    caught_up(leader)
    assert leader.produce_outcome(leader.required_offset(again, ACKS_ALL), 1) is Errors.NONE


def test_read_committed_fetches_stop_at_the_open_transaction(leader):
    leader.append_as_leader(build_batch([(None, b"x", 1)]), ACKS_LEADER, 1)
    leader.append_as_leader(batch(0), ACKS_LEADER, 1)
    leader.append_as_leader(build_batch([(None, b"y", 1)]), ACKS_LEADER, 1)
    caught_up(leader)
    assert leader.high_watermark == 3 and leader.last_stable_offset == 1
    assert committed_offsets(leader) == [0]
    response = leader.read(FetchRequest(0))
    assert response.last_stable_offset == 1 and len(list(iter_batches(response.records))) == 3
    assert leader.describe()["last_stable_offset"] == 1
    assert leader.fetch_ready(FetchRequest(1, isolation_level=READ_COMMITTED)) is None


def test_a_commit_marker_makes_the_transaction_visible_once_replicated(leader):
    leader.append_as_leader(batch(0), ACKS_LEADER, 1)
    info = leader.append_marker(marker(committed=True), 1)
    assert info.first_offset == 1 and leader.last_stable_offset == 0
    assert leader.produce_outcome(info.last_offset + 1, 1) is None
    request = FetchRequest(0, isolation_level=READ_COMMITTED)
    assert leader.fetch_ready(request) is None
    caught_up(leader)
    assert leader.produce_outcome(info.last_offset + 1, 1) is Errors.NONE
    assert leader.last_stable_offset == 2 and leader.fetch_ready(request) is True
    assert committed_offsets(leader) == [0, 1]
    assert leader.read(FetchRequest(0, isolation_level=READ_COMMITTED)).aborted_transactions == ()


def test_an_aborted_transaction_is_listed_with_the_records_it_overlaps(leader):
    leader.append_as_leader(build_batch([(None, b"x", 1)]), ACKS_LEADER, 1)
    leader.append_as_leader(batch(0), ACKS_LEADER, 1)
    leader.append_as_leader(batch(1), ACKS_LEADER, 1)
    leader.append_marker(marker(committed=False), 1)
    caught_up(leader)
    response = leader.read(FetchRequest(0, isolation_level=READ_COMMITTED))
    assert response.aborted_transactions == (AbortedTransaction(PID, 1),)
    assert response.last_stable_offset == 4
    later = leader.read(FetchRequest(4, isolation_level=READ_COMMITTED))
    assert later.aborted_transactions == ()


def test_list_offsets_latest_is_the_lso_for_read_committed(leader):
    leader.append_as_leader(build_batch([(None, b"x", 1)]), ACKS_LEADER, 1)
    leader.append_as_leader(batch(0), ACKS_LEADER, 1)
    caught_up(leader)
    assert leader.list_offsets(LATEST_TIMESTAMP, -1).offset == 2
    assert leader.list_offsets(LATEST_TIMESTAMP, -1, READ_COMMITTED).offset == 1


def test_only_the_leader_appends_markers(open_log, clock):
    follower = Partition("events", 0, 1, open_log("follower"), clock)
    follower.make_follower(STATE)
    with pytest.raises(NotLeaderOrFollowerError):
        follower.append_marker(marker(committed=True), 1)


def test_a_stale_coordinator_marker_is_fenced(leader):
    leader.append_as_leader(batch(0), ACKS_LEADER, 1)
    leader.append_marker(WriteTxnMarkersRequest(PID, 0, True, coordinator_epoch=4), 1)
    with pytest.raises(RafkaError) as caught:
        leader.append_marker(WriteTxnMarkersRequest(PID, 0, False, coordinator_epoch=3), 1)
    assert caught.value.error is Errors.TRANSACTION_COORDINATOR_FENCED
