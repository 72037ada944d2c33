"""Tests for rafka.groups.group_metadata_manager: loading, offsets, group records, the append path.

No Ray: the manager writes to and replays from ``FakeOffsetsLog`` (real batches in memory, see
conftest.py), and a second manager over the same log plays the coordinator that takes over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rafka.groups import group_metadata_manager as gmm
from rafka.groups.group_metadata import GroupMetadata, GroupState, MemberMetadata
from rafka.groups.group_metadata_manager import GroupMetadataManager, PartitionCountCache
from rafka.groups.membership import stored_members
from rafka.groups.offsets_codec import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    encode_key,
    encode_offset,
    partition_for,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import CommittedOffset, OffsetCommitEntry
from rafka.protocol.records.builder import build_batch
from rafka.protocol.types import TopicPartition

NUM_PARTITIONS = 4
GROUP = "payments"
PARTITION = partition_for(GROUP, NUM_PARTITIONS)
OTHER = next(
    g for g in (f"group-{i}" for i in range(100)) if partition_for(g, NUM_PARTITIONS) != PARTITION
)
SAME = next(
    g for g in (f"group-{i}" for i in range(100)) if partition_for(g, NUM_PARTITIONS) == PARTITION
)
NOW_MS = 1_700_000_000_000


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


async def settle() -> None:
    """Let every ready task run until the loop has nothing left to do right now."""
    for _ in range(10):
        await asyncio.sleep(0)


def manager(log: Any, metadata: Any, max_metadata: int = 16) -> GroupMetadataManager:
    return GroupMetadataManager(7, NUM_PARTITIONS, max_metadata, log, metadata, lambda: NOW_MS)


class Loaded:
    """Collects what ``load`` hands to the membership."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupValue] = {}

    def __call__(self, group_id: str, value: GroupValue) -> None:
        self.groups[group_id] = value


async def owning(m: GroupMetadataManager, *partitions: int, epoch: int = 1) -> Loaded:
    """Load ``partitions`` (default: the one owning GROUP) and return what was loaded."""
    loaded = Loaded()
    for partition in partitions or (PARTITION,):
        m.start_loading(partition, epoch)
        assert await m.load(partition, epoch, loaded)
    return loaded


def offset_batch(group_id: str, partition: int, offset: int) -> bytes:
    """A batch holding one committed-offset record, as a coordinator writes it."""
    key = encode_key(OffsetKey(group_id, "orders", partition))
    return build_batch([(key, encode_offset(OffsetValue(offset, "", NOW_MS)), NOW_MS)])


async def held_load(
    m: GroupMetadataManager, log: Any, epoch: int, loaded: Loaded | None = None
) -> asyncio.Task[bool]:
    """Start loading GROUP's partition in ``epoch``; the load runs until its read, held."""
    if log.read_gate is None:
        log.read_gate = asyncio.Event()
    if not log.data:
        log.append_batch(PARTITION, offset_batch(GROUP, 0, 1))
    m.start_loading(PARTITION, epoch)
    load = asyncio.create_task(m.load(PARTITION, epoch, loaded or Loaded()))
    await settle()
    return load


def entry(partition: int, offset: int, topic: str = "orders", metadata: str = "") -> Any:
    return OffsetCommitEntry(topic, partition, offset, metadata)


def stable_group(group_id: str = GROUP) -> GroupMetadata:
    group = GroupMetadata(group_id)
    group.add_member(MemberMetadata("m1", "c1", "/h1", 10_000, 20_000, (("range", b"sub-1"),)))
    group.add_member(MemberMetadata("m2", "c2", "/h2", 10_000, 20_000, (("range", b"sub-2"),)))
    group.transition_to(GroupState.PREPARING_REBALANCE)
    for member in group.members.values():
        member.awaiting_join = True
    group.init_next_generation()
    group.members["m1"].assignment = b"a1"
    group.members["m2"].assignment = b"a2"
    return group


# ---------------------------------------------------------------------------- ownership


def test_a_group_is_not_coordinated_before_its_partition_is_loaded(
    offsets_log: Any, topic_metadata: Any
) -> None:
    m = manager(offsets_log, topic_metadata)
    error = m.ownership_error(GROUP)
    assert error is not None and error[0] is Errors.NOT_COORDINATOR
    assert f"__consumer_offsets-{PARTITION}" in error[1]


def test_a_group_is_load_in_progress_while_its_partition_loads_and_coordinated_after(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        load = await held_load(m, offsets_log, 3)
        error = m.ownership_error(GROUP)
        assert error is not None and error[0] is Errors.COORDINATOR_LOAD_IN_PROGRESS
        offsets_log.read_gate.set()
        assert await load
        assert m.ownership_error(GROUP) is None
        assert m.owned == {PARTITION: 3} and m.loading == {}
        assert m.is_current(PARTITION, 3) and not m.is_current(PARTITION, 4)

    run(scenario)


@pytest.mark.parametrize("group_id", ["", None])
def test_a_missing_group_id_is_invalid_group_id(
    offsets_log: Any, topic_metadata: Any, group_id: Any
) -> None:
    m = manager(offsets_log, topic_metadata)
    error = m.ownership_error(group_id)
    assert error is not None and error[0] is Errors.INVALID_GROUP_ID


def test_groups_map_to_partitions_as_kafka_maps_them_for_the_current_partition_count(
    offsets_log: Any, topic_metadata: Any
) -> None:
    m = manager(offsets_log, topic_metadata)
    assert m.partition_for(GROUP) == partition_for(GROUP, NUM_PARTITIONS)
    m.num_partitions = 50
    assert m.partition_for(GROUP) == partition_for(GROUP, 50)


# ---------------------------------------------------------------------------- loading


def test_committed_offsets_and_groups_survive_a_move_to_another_coordinator(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        first = manager(offsets_log, topic_metadata)
        await owning(first)
        group = stable_group()
        assert await first.store_group(group) is Errors.NONE
        response = await first.commit_offsets(GROUP, [entry(0, 42, metadata="m"), entry(2, 7)])
        assert {p.error for p in response.partitions} == {Errors.NONE}
        assert (await first.commit_offsets(GROUP, [entry(0, 43)])).error is Errors.NONE

        second = manager(offsets_log, topic_metadata)
        loaded = await owning(second)
        assert loaded.groups == {
            GROUP: GroupValue("consumer", 1, "range", "m1", NOW_MS, stored_members(group))
        }
        fetched = second.fetch_offsets(GROUP, None)
        assert fetched.offsets == (
            CommittedOffset("orders", 0, 43, "", NOW_MS),
            CommittedOffset("orders", 2, 7, "", NOW_MS),
        )

    run(scenario)


def test_load_replays_the_log_in_chunks_until_its_end(
    offsets_log: Any, topic_metadata: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        first = manager(offsets_log, topic_metadata)
        await owning(first)
        for offset in range(5):
            await first.commit_offsets(GROUP, [entry(1, offset)])
        monkeypatch.setattr(gmm, "LOAD_CHUNK_BYTES", 1)
        second = manager(offsets_log, topic_metadata)
        await owning(second)
        assert [r[1] for r in offsets_log.reads] == [0, 1, 2, 3, 4]
        assert second.fetch_offsets(GROUP, [("orders", 1)]).offsets[0].offset == 4

    run(scenario)


def test_load_starts_at_the_log_start_offset(offsets_log: Any, topic_metadata: Any) -> None:
    async def scenario() -> None:
        first = manager(offsets_log, topic_metadata)
        await owning(first)
        await first.commit_offsets(GROUP, [entry(1, 5)])
        await first.commit_offsets(GROUP, [entry(1, 6)])
        offsets_log.log_start[PARTITION] = 1
        await owning(manager(offsets_log, topic_metadata))
        assert offsets_log.reads[0][:2] == (PARTITION, 1)

    run(scenario)


def test_load_applies_tombstones_so_a_deleted_group_does_not_come_back(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        first = manager(offsets_log, topic_metadata)
        await owning(first)
        await first.store_group(stable_group())
        await first.commit_offsets(GROUP, [entry(0, 1), entry(1, 2)])
        await first.commit_offsets(SAME, [entry(0, 9)])
        assert await first.delete_group(GROUP) is Errors.NONE
        assert not first.has_offsets(GROUP)

        second = manager(offsets_log, topic_metadata)
        loaded = await owning(second)
        assert loaded.groups == {}
        assert second.groups_with_offsets() == [SAME]

    run(scenario)


def test_a_group_tombstone_also_drops_the_offsets_replayed_before_it(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        offset = encode_offset(OffsetValue(3, "", NOW_MS))
        offsets_log.append_batch(
            PARTITION,
            build_batch(
                [
                    (encode_key(OffsetKey(GROUP, "orders", 0)), offset, NOW_MS),
                    (encode_key(OffsetKey(SAME, "orders", 0)), offset, NOW_MS),
                    (encode_key(GroupKey(GROUP)), None, NOW_MS),
                ]
            ),
        )
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        assert m.groups_with_offsets() == [SAME]

    run(scenario)


def test_a_failed_load_leaves_the_partition_unowned_and_a_later_load_succeeds(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        offsets_log.unreachable = True
        m.start_loading(PARTITION, 1)
        assert not await m.load(PARTITION, 1, Loaded())
        assert m.loading == {} and m.owned == {}
        error = m.ownership_error(GROUP)
        assert error is not None and error[0] is Errors.NOT_COORDINATOR
        offsets_log.unreachable = False
        await owning(m)
        assert m.ownership_error(GROUP) is None

    run(scenario)


def test_a_corrupt_record_fails_the_load_instead_of_installing_part_of_it(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        offsets_log.append_batch(PARTITION, build_batch([(b"\xc1 not msgpack", b"", NOW_MS)]))
        m = manager(offsets_log, topic_metadata)
        m.start_loading(PARTITION, 1)
        assert not await m.load(PARTITION, 1, Loaded())
        assert m.owned == {} and m.loading == {}

    run(scenario)


def test_a_load_overtaken_by_an_unload_installs_nothing(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        first = manager(offsets_log, topic_metadata)
        await owning(first)
        await first.store_group(stable_group())
        await first.commit_offsets(GROUP, [entry(0, 1)])

        second = manager(offsets_log, topic_metadata)
        loaded = Loaded()
        load = await held_load(second, offsets_log, 2, loaded)
        assert second.unload(PARTITION, []) == set()
        offsets_log.read_gate.set()
        assert not await load
        assert loaded.groups == {} and second.groups_with_offsets() == []
        assert second.owned == {} and second.loading == {}

    run(scenario)


def test_a_load_overtaken_by_a_newer_epoch_leaves_the_newer_load_in_charge(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        old = await held_load(m, offsets_log, 1)
        new = await held_load(m, offsets_log, 2)
        offsets_log.read_gate.set()
        assert await asyncio.gather(old, new) == [False, True]
        assert m.owned == {PARTITION: 2}

    run(scenario)


# ---------------------------------------------------------------------------- unloading


def test_unload_names_the_partitions_groups_and_drops_their_offsets_only(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m, PARTITION, partition_for(OTHER, NUM_PARTITIONS))
        await m.commit_offsets(GROUP, [entry(0, 1)])
        await m.commit_offsets(OTHER, [entry(0, 1)])
        # SAME has no offsets, only members: the membership names it.
        assert m.unload(PARTITION, [SAME, OTHER]) == {GROUP, SAME}
        assert m.groups_with_offsets() == [OTHER]
        error = m.ownership_error(GROUP)
        assert error is not None and error[0] is Errors.NOT_COORDINATOR
        assert m.ownership_error(OTHER) is None

    run(scenario)


def test_unloading_a_partition_not_owned_names_no_groups(
    offsets_log: Any, topic_metadata: Any
) -> None:
    m = manager(offsets_log, topic_metadata)
    assert m.unload(PARTITION, [GROUP]) == set()


# ---------------------------------------------------------------------------- commits


def test_each_invalid_partition_of_a_commit_is_refused_and_the_valid_ones_are_written(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata, max_metadata=4)
        await owning(m)
        response = await m.commit_offsets(
            GROUP,
            [
                entry(0, 10),
                entry(3, 10),
                entry(-1, 10),
                entry(0, 10, topic="nope"),
                entry(1, -1),
                entry(2, 10, metadata="12345"),
                entry(0, 5, topic="audit", metadata="1234"),
            ],
        )
        assert response.error is Errors.NONE
        errors = {(p.topic, p.partition): p.error for p in response.partitions}
        assert errors == {
            ("orders", 0): Errors.NONE,
            ("orders", 3): Errors.UNKNOWN_TOPIC_OR_PARTITION,
            ("orders", -1): Errors.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
            ("orders", 1): Errors.INVALID_COMMIT_OFFSET_SIZE,
            ("orders", 2): Errors.OFFSET_METADATA_TOO_LARGE,
            ("audit", 0): Errors.NONE,
        }
        assert m.offsets[GROUP] == {
            TopicPartition("orders", 0): OffsetValue(10, "", NOW_MS),
            TopicPartition("audit", 0): OffsetValue(5, "1234", NOW_MS),
        }
        await owning(reloaded := manager(offsets_log, topic_metadata))
        assert reloaded.offsets == m.offsets

    run(scenario)


def test_a_commit_with_no_valid_partition_writes_nothing(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        response = await m.commit_offsets(GROUP, [entry(9, 1)])
        assert [p.error for p in response.partitions] == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
        assert offsets_log.next_offset.get(PARTITION, 0) == 0

    run(scenario)


@pytest.mark.parametrize(
    ("replica_error", "client_error"),
    [
        (Errors.NOT_ENOUGH_REPLICAS, Errors.COORDINATOR_NOT_AVAILABLE),
        (Errors.REQUEST_TIMED_OUT, Errors.COORDINATOR_NOT_AVAILABLE),
        (Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_COORDINATOR),
        (Errors.MESSAGE_TOO_LARGE, Errors.INVALID_COMMIT_OFFSET_SIZE),
        (Errors.CORRUPT_MESSAGE, Errors.UNKNOWN_SERVER_ERROR),
    ],
)
def test_a_failed_append_is_reported_per_partition_with_kafkas_coordinator_error(
    offsets_log: Any, topic_metadata: Any, replica_error: Errors, client_error: Errors
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        offsets_log.errors = [replica_error]
        response = await m.commit_offsets(GROUP, [entry(0, 1), entry(1, 1)])
        assert [p.error for p in response.partitions] == [client_error, client_error]
        assert not m.has_offsets(GROUP)

    run(scenario)


def test_an_unreachable_offsets_replica_means_not_coordinator(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        offsets_log.unreachable = True
        response = await m.commit_offsets(GROUP, [entry(0, 1)])
        assert [p.error for p in response.partitions] == [Errors.NOT_COORDINATOR]
        assert await m.store_group(stable_group()) is Errors.NOT_COORDINATOR
        assert await m.delete_group(GROUP) is Errors.NOT_COORDINATOR

    run(scenario)


def test_a_commit_acknowledged_after_its_partition_moved_away_is_not_cached(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        offsets_log.append_gate = asyncio.Event()
        commit = asyncio.create_task(m.commit_offsets(GROUP, [entry(0, 1)]))
        await settle()
        m.unload(PARTITION, [])
        offsets_log.append_gate.set()
        assert [p.error for p in (await commit).partitions] == [Errors.NONE]
        assert not m.has_offsets(GROUP)

    run(scenario)


def test_appends_to_one_offsets_partition_run_one_at_a_time_in_order(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        offsets_log.append_gate = asyncio.Event()
        commits = [asyncio.create_task(m.commit_offsets(GROUP, [entry(0, n)])) for n in range(3)]
        await settle()
        assert offsets_log.appends_in_flight == 1
        offsets_log.append_gate.set()
        await asyncio.gather(*commits)
        assert offsets_log.most_appends_in_flight == 1
        await owning(reloaded := manager(offsets_log, topic_metadata))
        assert reloaded.fetch_offsets(GROUP, [("orders", 0)]).offsets[0].offset == 2

    run(scenario)


# ---------------------------------------------------------------------------- fetches and groups


def test_fetch_gives_minus_one_for_partitions_without_a_commit_and_every_commit_if_asked(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        await m.commit_offsets(GROUP, [entry(2, 20, metadata="x"), entry(0, 5, topic="audit")])
        assert m.fetch_offsets(GROUP, [("orders", 2), ("orders", 1)]).offsets == (
            CommittedOffset("orders", 2, 20, "x", NOW_MS),
            CommittedOffset("orders", 1, -1),
        )
        assert [(o.topic, o.partition) for o in m.fetch_offsets(GROUP, None).offsets] == [
            ("audit", 0),
            ("orders", 2),
        ]
        assert m.fetch_offsets("unknown", None).offsets == ()

    run(scenario)


def test_a_group_record_holds_generation_assignor_leader_and_members(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        group = stable_group()
        assert await m.store_group(group) is Errors.NONE
        loaded = await owning(manager(offsets_log, topic_metadata))
        value = loaded.groups[GROUP]
        assert (value.generation_id, value.protocol, value.leader_id) == (1, "range", "m1")
        assert [(s.member_id, s.subscription, s.assignment) for s in value.members] == [
            ("m1", b"sub-1", b"a1"),
            ("m2", b"sub-2", b"a2"),
        ]

    run(scenario)


# ---------------------------------------------------------------------------- partition counts


class Monotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_partition_counts_are_reused_until_they_age_or_a_partition_is_unknown(
    topic_metadata: Any,
) -> None:
    async def scenario() -> None:
        clock = Monotonic()
        cache = PartitionCountCache(topic_metadata, ttl_s=5.0, monotonic=clock)
        assert await cache.get([TopicPartition("orders", 0)]) == {"orders": 3}
        assert await cache.get([TopicPartition("orders", 2)]) == {"orders": 3}
        assert topic_metadata.asked == [("orders",)]
        await cache.get([TopicPartition("audit", 0)])
        assert topic_metadata.asked[-1] == ("audit", "orders")
        clock.now += 4.9
        await cache.get([TopicPartition("orders", 1)])
        assert len(topic_metadata.asked) == 2
        clock.now += 0.2
        await cache.get([TopicPartition("orders", 1)])
        assert len(topic_metadata.asked) == 3
        topic_metadata.counts["orders"] = 6
        assert (await cache.get([TopicPartition("orders", 5)]))["orders"] == 6

    run(scenario)


# ---------------------------------------------------------------------------- deleted topics


def test_a_deleted_topics_offsets_are_tombstoned_and_stay_gone_after_a_move(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        first = manager(offsets_log, topic_metadata)
        await owning(first)
        entries = [entry(0, 42), entry(0, 5, topic="audit")]
        assert (await first.commit_offsets(GROUP, entries)).error is Errors.NONE
        assert await first.remove_topics(["orders"]) == 1
        assert first.fetch_offsets(GROUP, None).offsets == (
            CommittedOffset("audit", 0, 5, "", NOW_MS),
        )
        second = manager(offsets_log, topic_metadata)
        await owning(second)
        assert second.fetch_offsets(GROUP, None).offsets == (
            CommittedOffset("audit", 0, 5, "", NOW_MS),
        )
        assert await second.remove_topics(["orders"]) == 0

    run(scenario)


def test_a_topic_created_again_after_deletion_is_counted_afresh(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        m = manager(offsets_log, topic_metadata)
        await owning(m)
        assert (await m.commit_offsets(GROUP, [entry(2, 1)])).error is Errors.NONE
        await m.remove_topics(["orders"])
        topic_metadata.counts["orders"] = 1
        refused = await m.commit_offsets(GROUP, [entry(2, 1)])
        assert refused.partitions[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION

    run(scenario)
