"""Tests for rafka.groups.coordinator: the actor class driven directly, with Ray faked at its edge.

The coordinator gets ``FakeOffsetsLog`` and ``FakeTopicMetadata`` (conftest.py) in place of its
replica actors and broker, and a fake clock in its membership; everything else is the real code.
These check the shell's wiring and the fencing a consumer relies on: a commit or heartbeat from a
stale generation or an unknown member is refused and writes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rafka.actors.broker.config import BrokerConfig
from rafka.groups.coordinator import GroupCoordinator
from rafka.groups.offsets_codec import partition_for
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import (
    NO_GENERATION,
    NO_MEMBER,
    GroupListing,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitEntry,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

NUM_PARTITIONS = 4
GROUP = "payments"
PARTITION = partition_for(GROUP, NUM_PARTITIONS)
SESSION_MS = 10_000
CONFIG = BrokerConfig(
    broker_id=3,
    offsets_topic_num_partitions=NUM_PARTITIONS,
    group_initial_rebalance_delay_ms=0,
)


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


async def settle() -> None:
    """Let every ready task run until the loop has nothing left to do right now."""
    for _ in range(10):
        await asyncio.sleep(0)


class FakeClock:
    """Milliseconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


async def coordinator(log: Any, metadata: Any, clock: FakeClock | None = None) -> GroupCoordinator:
    """A coordinator leading GROUP's offsets partition, loaded; its membership on ``clock``."""
    c = GroupCoordinator(CONFIG, "test", log, metadata)
    c.membership.clock = clock or FakeClock()
    await c.on_leadership(PARTITION, True, 1, NUM_PARTITIONS)
    await settle()
    assert (await c.describe())["owned"] == [PARTITION]
    return c


async def join(c: GroupCoordinator, member_id: str = NO_MEMBER) -> JoinGroupResponse:
    request = JoinGroupRequest(
        GROUP, SESSION_MS, 20_000, member_id, "consumer", (("range", b"sub"),), "client"
    )
    return await c.join_group(request)


async def stable_member(c: GroupCoordinator) -> tuple[str, int]:
    """Join GROUP alone and sync; the member id and generation of the Stable group."""
    joined = await join(c)
    assert joined.error is Errors.NONE
    assignment = ((joined.member_id, b"all"),)
    synced = await c.sync_group(
        SyncGroupRequest(GROUP, joined.generation_id, joined.member_id, assignment)
    )
    assert synced.error is Errors.NONE and synced.assignment == b"all"
    return joined.member_id, joined.generation_id


def commit(generation: int, member_id: str, offset: int = 5) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        GROUP, generation, member_id, (OffsetCommitEntry("orders", 0, offset),)
    )


def test_a_member_of_the_current_generation_commits_and_fetches_its_offsets(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        member, generation = await stable_member(c)
        response = await c.offset_commit(commit(generation, member, 42))
        assert response.error is Errors.NONE
        assert [p.error for p in response.partitions] == [Errors.NONE]
        fetched = await c.offset_fetch(OffsetFetchRequest(GROUP, (("orders", 0),)))
        assert [o.offset for o in fetched.offsets] == [42]

    run(scenario)


def test_a_commit_from_a_stale_generation_is_illegal_generation_and_writes_nothing(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        member, generation = await stable_member(c)
        written = offsets_log.next_offset[PARTITION]
        response = await c.offset_commit(commit(generation - 1, member))
        assert response.error is Errors.ILLEGAL_GENERATION
        assert response.partitions == ()
        assert offsets_log.next_offset[PARTITION] == written
        fetched = await c.offset_fetch(OffsetFetchRequest(GROUP, (("orders", 0),)))
        assert [o.offset for o in fetched.offsets] == [-1]

    run(scenario)


def test_a_commit_from_an_unknown_member_is_unknown_member_id_and_writes_nothing(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        _, generation = await stable_member(c)
        written = offsets_log.next_offset[PARTITION]
        for member_id in ("ghost", NO_MEMBER):
            response = await c.offset_commit(commit(generation, member_id))
            assert response.error is Errors.UNKNOWN_MEMBER_ID
        admin = await c.offset_commit(commit(NO_GENERATION, NO_MEMBER))
        assert admin.error is Errors.UNKNOWN_MEMBER_ID  # the group has members
        assert offsets_log.next_offset[PARTITION] == written

    run(scenario)


def test_a_member_removed_for_its_session_timeout_can_neither_heartbeat_nor_commit(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        clock = FakeClock()
        c = await coordinator(offsets_log, topic_metadata, clock)
        member, generation = await stable_member(c)
        written = offsets_log.next_offset[PARTITION]
        clock.now += SESSION_MS + 1
        c.membership.tick()
        await settle()
        beat = await c.heartbeat(HeartbeatRequest(GROUP, generation, member))
        assert beat.error is Errors.UNKNOWN_MEMBER_ID
        assert (await c.offset_commit(commit(generation, member))).error is Errors.UNKNOWN_MEMBER_ID
        # Only the emptied group's record was written, no offset.
        assert offsets_log.next_offset[PARTITION] == written + 1
        fetched = await c.offset_fetch(OffsetFetchRequest(GROUP, (("orders", 0),)))
        assert [o.offset for o in fetched.offsets] == [-1]

    run(scenario)


def test_a_member_left_behind_by_a_rebalance_gets_illegal_generation_for_heartbeat_and_commit(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        member, generation = await stable_member(c)
        rejoined = await join(c, member)  # the leader rejoining starts generation + 1
        assert rejoined.generation_id == generation + 1
        beat = await c.heartbeat(HeartbeatRequest(GROUP, generation, member))
        assert beat.error is Errors.ILLEGAL_GENERATION
        stale = await c.offset_commit(commit(generation, member))
        assert stale.error is Errors.ILLEGAL_GENERATION

    run(scenario)


def test_requests_for_a_group_whose_partition_is_not_led_here_are_not_coordinator(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        member, generation = await stable_member(c)
        await c.on_leadership(PARTITION, False, 2, NUM_PARTITIONS)
        assert (await c.describe())["groups"] == []
        assert (await join(c)).error is Errors.NOT_COORDINATOR
        answers = [
            (await c.heartbeat(HeartbeatRequest(GROUP, generation, member))).error,
            (await c.leave_group(LeaveGroupRequest(GROUP, member))).error,
            (await c.offset_commit(commit(generation, member))).error,
            (await c.offset_fetch(OffsetFetchRequest(GROUP))).error,
            (await c.describe_group(GROUP)).error,
            (await c.delete_group(GROUP)).error,
        ]
        assert answers == [Errors.NOT_COORDINATOR] * len(answers)

    run(scenario)


def test_a_new_coordinator_resumes_the_group_and_its_offsets_from_the_log(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        old = await coordinator(offsets_log, topic_metadata)
        member, generation = await stable_member(old)
        await old.offset_commit(commit(generation, member, 17))

        new = await coordinator(offsets_log, topic_metadata)
        description = await new.describe_group(GROUP)
        assert (description.state, description.generation_id) == ("Stable", generation)
        assert [m.member_id for m in description.members] == [member]
        beat = await new.heartbeat(HeartbeatRequest(GROUP, generation, member))
        assert beat.error is Errors.NONE
        fetched = await new.offset_fetch(OffsetFetchRequest(GROUP))
        assert [(o.topic, o.partition, o.offset) for o in fetched.offsets] == [("orders", 0, 17)]

    run(scenario)


def test_delete_group_refuses_a_group_with_members_and_removes_an_empty_one(
    offsets_log: Any, topic_metadata: Any
) -> None:
    async def scenario() -> None:
        c = await coordinator(offsets_log, topic_metadata)
        assert (await c.delete_group(GROUP)).error is Errors.GROUP_ID_NOT_FOUND
        member, generation = await stable_member(c)
        await c.offset_commit(commit(generation, member))
        assert (await c.delete_group(GROUP)).error is Errors.NON_EMPTY_GROUP
        assert (await c.leave_group(LeaveGroupRequest(GROUP, member))).error is Errors.NONE
        await settle()
        assert await c.list_groups() == (GroupListing(GROUP, "consumer", "Empty"),)
        assert (await c.delete_group(GROUP)).error is Errors.NONE
        assert await c.list_groups() == ()
        assert (await c.describe_group(GROUP)).state == "Dead"

        reloaded = await coordinator(offsets_log, topic_metadata)
        assert await reloaded.list_groups() == ()

    run(scenario)
