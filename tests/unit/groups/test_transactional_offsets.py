"""Transactional offset commits through the group coordinator (the actor class, Ray faked at its
edge): TxnOffsetCommit appends a transactional batch of the producer and holds the offsets pending,
invisible to OffsetFetch, until WriteTxnMarkers appends the marker and commits or drops them; a
coordinator loading the log reproduces this, including transactions whose marker is still to come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rafka.actors.broker.config import BrokerConfig
from rafka.groups.coordinator import GroupCoordinator
from rafka.groups.offsets_codec import OffsetKey, encode_key, encode_offset, partition_for
from rafka.groups.offsets_codec import OffsetValue as Value
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import (
    JoinGroupRequest,
    OffsetCommitEntry,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from rafka.protocol.messages.transactions import TxnOffsetCommitRequest, WriteTxnMarkersRequest
from rafka.protocol.records.batch import NO_SEQUENCE, iter_batches
from rafka.protocol.records.builder import RecordBatchBuilder
from rafka.protocol.records.control import ControlRecordType, parse_marker
from rafka.protocol.types import TopicPartition

NUM_PARTITIONS = 4
GROUP = "payments"
PARTITION = partition_for(GROUP, NUM_PARTITIONS)
OTHER = next(
    g for g in (f"group-{i}" for i in range(100)) if partition_for(g, NUM_PARTITIONS) != PARTITION
)
CONFIG = BrokerConfig(
    broker_id=3, offsets_topic_num_partitions=NUM_PARTITIONS, group_initial_rebalance_delay_ms=0
)
PID, EPOCH = 4000, 2
OTHER_PID = 5000


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def coordinator(log: Any, metadata: Any, *partitions: int) -> GroupCoordinator:
    """A coordinator that loaded ``partitions`` (default: GROUP's) from ``log``."""
    c = GroupCoordinator(CONFIG, "test", log, metadata)
    for partition in partitions or (PARTITION,):
        await c.on_leadership(partition, True, 1, NUM_PARTITIONS)
    await settle()
    assert (await c.describe())["owned"] == sorted(partitions or (PARTITION,))
    return c


def txn_commit(
    offset: int,
    group: str = GROUP,
    producer_id: int = PID,
    partition: int = 0,
    generation: int = -1,
    member: str = "",
) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        "txn-id",
        group,
        producer_id,
        EPOCH,
        (OffsetCommitEntry("orders", partition, offset),),
        generation,
        member,
    )


def marker(committed: bool, producer_id: int = PID) -> WriteTxnMarkersRequest:
    return WriteTxnMarkersRequest(producer_id, EPOCH, committed, coordinator_epoch=7)


async def committed(c: GroupCoordinator, group: str = GROUP, partition: int = 0) -> int:
    fetched = await c.offset_fetch(OffsetFetchRequest(group, (("orders", partition),)))
    assert fetched.error is Errors.NONE
    return fetched.offsets[0].offset


def plain_commit(offset: int, group: str = GROUP) -> OffsetCommitRequest:
    return OffsetCommitRequest(group, -1, "", (OffsetCommitEntry("orders", 0, offset),))


def test_txn_offsets_stay_invisible_until_the_commit_marker_then_are_committed(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        response = await c.txn_offset_commit(txn_commit(42))
        assert response.error is Errors.NONE
        assert response.results == ((TopicPartition("orders", 0), Errors.NONE),)
        assert await committed(c) == -1
        assert (await c.describe())["pending_transactions"] == [PID]
        written = await c.write_txn_markers(PARTITION, marker(committed=True))
        assert written.error is Errors.NONE
        assert await committed(c) == 42
        assert (await c.describe())["pending_transactions"] == []

    run(scenario)


def test_a_fetch_requiring_stable_offsets_is_told_to_wait_while_a_transaction_commits_one(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        assert (await c.txn_offset_commit(txn_commit(42))).error is Errors.NONE
        stable = OffsetFetchRequest(GROUP, (("orders", 0),), require_stable=True)
        unstable = await c.offset_fetch(stable)
        assert unstable.error is Errors.UNSTABLE_OFFSET_COMMIT
        assert "orders-0" in (unstable.error_message or "")
        # Another partition of the group, and a fetch not requiring stability, are answered.
        other = await c.offset_fetch(OffsetFetchRequest(GROUP, (("orders", 1),), True))
        assert other.error is Errors.NONE
        assert await committed(c) == -1
        assert (await c.write_txn_markers(PARTITION, marker(committed=True))).error is Errors.NONE
        settled = await c.offset_fetch(stable)
        assert settled.error is Errors.NONE
        assert settled.offsets[0].offset == 42

    run(scenario)


def test_the_log_holds_a_transactional_batch_of_the_producer_then_its_marker(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        await c.txn_offset_commit(txn_commit(42))
        await c.write_txn_markers(PARTITION, marker(committed=False))
        data = bytes(offsets_log.data[PARTITION])
        (_, offsets_batch), (p2, control) = list(iter_batches(data))
        assert offsets_batch.is_transactional and not offsets_batch.is_control
        assert (offsets_batch.producer_id, offsets_batch.producer_epoch) == (PID, EPOCH)
        assert offsets_batch.base_sequence == NO_SEQUENCE
        assert control.is_control and (control.producer_id, control.producer_epoch) == (PID, EPOCH)
        found = parse_marker(data, p2, control)
        assert (found.control_type, found.coordinator_epoch) == (ControlRecordType.ABORT, 7)

    run(scenario)


def test_an_abort_marker_drops_the_pending_offsets(offsets_log: Any, topic_metadata: Any) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        await c.offset_commit(plain_commit(5))
        await c.txn_offset_commit(txn_commit(42))
        assert (await c.write_txn_markers(PARTITION, marker(committed=False))).error is Errors.NONE
        assert await committed(c) == 5
        # The transaction's offsets are gone: a later commit marker has nothing to install.
        await c.write_txn_markers(PARTITION, marker(committed=True))
        assert await committed(c) == 5

    run(scenario)


def test_a_marker_ends_the_producers_offsets_of_its_partitions_groups_only(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata, PARTITION, partition_for(OTHER, 4))
        await c.txn_offset_commit(txn_commit(42))
        await c.txn_offset_commit(txn_commit(17, group=OTHER))
        await c.txn_offset_commit(txn_commit(99, producer_id=OTHER_PID, partition=1))
        await c.write_txn_markers(PARTITION, marker(committed=True))
        assert await committed(c) == 42
        assert await committed(c, OTHER) == -1
        assert await committed(c, partition=1) == -1
        await c.write_txn_markers(partition_for(OTHER, 4), marker(committed=True))
        assert await committed(c, OTHER) == 17
        assert (await c.describe())["pending_transactions"] == [OTHER_PID]

    run(scenario)


def test_a_plain_commit_written_after_a_pending_one_wins_when_the_transaction_commits(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        await c.txn_offset_commit(txn_commit(42))
        await c.offset_commit(plain_commit(50))
        await c.write_txn_markers(PARTITION, marker(committed=True))
        assert await committed(c) == 50
        reloaded = await coordinator(offsets_log, topic_metadata)
        assert await committed(reloaded) == 50

    run(scenario)


def test_a_transactional_commit_written_after_a_plain_one_replaces_it(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        await c.offset_commit(plain_commit(50))
        await c.txn_offset_commit(txn_commit(42))
        await c.write_txn_markers(PARTITION, marker(committed=True))
        assert await committed(c) == 42
        reloaded = await coordinator(offsets_log, topic_metadata)
        assert await committed(reloaded) == 42

    run(scenario)


def test_of_two_committed_transactions_the_later_written_wins_whatever_the_marker_order(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        await c.txn_offset_commit(txn_commit(10, producer_id=PID))
        await c.txn_offset_commit(txn_commit(20, producer_id=OTHER_PID))
        await c.write_txn_markers(PARTITION, marker(True, producer_id=OTHER_PID))
        await c.write_txn_markers(PARTITION, marker(True, producer_id=PID))
        assert await committed(c) == 20
        reloaded = await coordinator(offsets_log, topic_metadata)
        assert await committed(reloaded) == 20

    run(scenario)


def test_loading_keeps_committed_and_aborted_transactions_apart_and_open_ones_pending(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        first = await coordinator(offsets_log, topic_metadata)
        await first.txn_offset_commit(txn_commit(10, partition=0))
        await first.txn_offset_commit(txn_commit(20, producer_id=OTHER_PID, partition=1))
        await first.write_txn_markers(PARTITION, marker(committed=True))
        await first.txn_offset_commit(txn_commit(11, partition=2))
        await first.write_txn_markers(PARTITION, marker(committed=False))
        # OTHER_PID's transaction is still open when the next coordinator loads the log.
        second = await coordinator(offsets_log, topic_metadata)
        assert [await committed(second, partition=p) for p in (0, 1, 2)] == [10, -1, -1]
        assert (await second.describe())["pending_transactions"] == [OTHER_PID]
        await second.write_txn_markers(PARTITION, marker(True, producer_id=OTHER_PID))
        assert await committed(second, partition=1) == 20

    run(scenario)


def test_a_transactional_batch_written_by_hand_is_pending_until_its_marker_on_load(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        builder = RecordBatchBuilder(producer_id=PID, producer_epoch=EPOCH, is_transactional=True)
        key = encode_key(OffsetKey(GROUP, "orders", 0))
        builder.append(1, key, encode_offset(Value(33, "", 1)))
        offsets_log.append_batch(PARTITION, builder.build())
        c = await coordinator(offsets_log, topic_metadata)
        assert await committed(c) == -1
        await c.write_txn_markers(PARTITION, marker(committed=True))
        assert await committed(c) == 33

    run(scenario)


def test_unloading_drops_pending_offsets_and_the_new_owner_finds_them_in_the_log(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        await c.txn_offset_commit(txn_commit(42))
        await c.on_leadership(PARTITION, False, 2, NUM_PARTITIONS)
        assert (await c.describe())["pending_transactions"] == []
        refused = await c.write_txn_markers(PARTITION, marker(committed=True))
        assert refused.error is Errors.NOT_COORDINATOR
        await c.on_leadership(PARTITION, True, 3, NUM_PARTITIONS)
        await settle()
        assert (await c.describe())["pending_transactions"] == [PID]
        assert (await c.write_txn_markers(PARTITION, marker(committed=True))).error is Errors.NONE
        assert await committed(c) == 42

    run(scenario)


def test_a_marker_for_a_partition_still_loading_is_refused_and_writes_nothing(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def loading() -> None:
        c = GroupCoordinator(CONFIG, "test", offsets_log, topic_metadata)
        c.manager.start_loading(PARTITION, 1)
        refused = await c.write_txn_markers(PARTITION, marker(committed=True))
        assert refused.error is Errors.COORDINATOR_LOAD_IN_PROGRESS
        assert refused.error.retriable
        assert PARTITION not in offsets_log.data

    run(loading)


def test_a_refused_marker_append_keeps_the_offsets_pending(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        await c.txn_offset_commit(txn_commit(42))
        offsets_log.errors = [Errors.NOT_ENOUGH_REPLICAS]
        refused = await c.write_txn_markers(PARTITION, marker(committed=True))
        assert refused.error is Errors.COORDINATOR_NOT_AVAILABLE
        assert await committed(c) == -1
        assert (await c.write_txn_markers(PARTITION, marker(committed=True))).error is Errors.NONE
        assert await committed(c) == 42

    run(scenario)


def test_a_fenced_producer_hears_the_replicas_epoch_error_per_partition(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        offsets_log.errors = [Errors.INVALID_PRODUCER_EPOCH]
        response = await c.txn_offset_commit(txn_commit(42))
        assert response.results == ((TopicPartition("orders", 0), Errors.INVALID_PRODUCER_EPOCH),)
        assert (await c.describe())["pending_transactions"] == []

    run(scenario)


def test_invalid_entries_are_refused_per_partition_as_in_offset_commit(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        request = TxnOffsetCommitRequest(
            "txn-id",
            GROUP,
            PID,
            EPOCH,
            (OffsetCommitEntry("orders", 0, 1), OffsetCommitEntry("nope", 0, 1)),
        )
        response = await c.txn_offset_commit(request)
        assert dict(response.results) == {
            TopicPartition("orders", 0): Errors.NONE,
            TopicPartition("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        }

    run(scenario)


def test_txn_commits_are_fenced_by_generation_and_member_when_given(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        joined = await c.join_group(
            JoinGroupRequest(GROUP, 10_000, 20_000, "", "consumer", (("range", b"s"),), "client")
        )
        member, generation = joined.member_id, joined.generation_id
        await c.sync_group(SyncGroupRequest(GROUP, generation, member, ((member, b"a"),)))
        stale = await c.txn_offset_commit(txn_commit(1, generation=generation - 1, member=member))
        assert stale.error is Errors.ILLEGAL_GENERATION
        assert stale.results == ((TopicPartition("orders", 0), Errors.ILLEGAL_GENERATION),)
        unknown = await c.txn_offset_commit(txn_commit(1, generation=generation, member="ghost"))
        assert unknown.error is Errors.UNKNOWN_MEMBER_ID
        assert (await c.describe())["pending_transactions"] == []
        current = await c.txn_offset_commit(txn_commit(2, generation=generation, member=member))
        assert current.error is Errors.NONE
        # A producer sending no group metadata commits even while the group has members.
        anonymous = await c.txn_offset_commit(txn_commit(3, producer_id=OTHER_PID))
        assert anonymous.error is Errors.NONE

    run(scenario)


def test_a_txn_commit_for_a_group_not_led_here_is_not_coordinator(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        response = await c.txn_offset_commit(txn_commit(1, group=OTHER))
        assert response.error is Errors.NOT_COORDINATOR
        assert partition_for(OTHER, NUM_PARTITIONS) not in offsets_log.data

    run(scenario)
