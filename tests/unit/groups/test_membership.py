"""Tests for rafka.groups.membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, expiry, fencing.

No Ray and no log: ``GroupMembership`` gets a fake clock (milliseconds the test advances) and a fake
``persist`` coroutine that records a snapshot of every group it is asked to store and answers with a
scripted error. Each test runs one scenario coroutine with ``asyncio.run``; parked requests are
tasks that the test lets the loop drive with ``settle()``, then checks whether they were answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rafka.groups.group_metadata import GroupMetadata, GroupState
from rafka.groups.membership import GroupMembership, MembershipConfig, stored_members
from rafka.groups.offsets_codec import GroupValue, StoredMember
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import (
    NO_GENERATION,
    NO_MEMBER,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)

G = GroupState
GROUP = "test-group"
SESSION_MS = 10_000
REBALANCE_MS = 20_000
DELAY_MS = 3000
MIN_SESSION_MS = 6000
MAX_SESSION_MS = 300_000


# ---------------------------------------------------------------------------- fakes and helpers


class FakeClock:
    """Milliseconds that move only when the test says so."""

    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@dataclass(frozen=True)
class Stored:
    """What ``persist`` was handed, copied at call time (the group object changes afterwards)."""

    group_id: str
    state: GroupState
    generation_id: int
    protocol: str | None
    leader_id: str | None
    assignments: dict[str, bytes]
    value: GroupValue


class FakePersist:
    """The coordinator's ``persist`` callback: records each call and answers with scripted errors.

    ``errors`` are popped one per call (Errors.NONE once exhausted); while ``gate`` is set and not
    released, calls block, so a test can act while an assignment is being written.
    """

    def __init__(self) -> None:
        self.calls: list[Stored] = []
        self.errors: list[Errors] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, group: GroupMetadata) -> Errors:
        value = GroupValue(
            group.protocol_type,
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            0,
            stored_members(group),
        )
        self.calls.append(
            Stored(
                group.group_id,
                group.state,
                group.generation_id,
                group.protocol_name,
                group.leader_id,
                {m: meta.assignment for m, meta in group.members.items()},
                value,
            )
        )
        if self.gate is not None:
            await self.gate.wait()
        return self.errors.pop(0) if self.errors else Errors.NONE


@dataclass
class Harness:
    membership: GroupMembership
    clock: FakeClock
    persist: FakePersist

    def group(self, group_id: str = GROUP) -> GroupMetadata:
        return self.membership.groups[group_id]

    def tick(self, advance_ms: int = 0) -> None:
        self.clock.advance(advance_ms)
        self.membership.tick()


def harness(
    delay_ms: int = 0, min_session_ms: int = MIN_SESSION_MS, max_session_ms: int = MAX_SESSION_MS
) -> Harness:
    clock = FakeClock()
    persist = FakePersist()
    config = MembershipConfig(min_session_ms, max_session_ms, delay_ms)
    return Harness(GroupMembership(config, clock, persist), clock, persist)


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


async def settle() -> None:
    """Let every ready task run until the loop has nothing left to do right now."""
    for _ in range(10):
        await asyncio.sleep(0)


def join_request(
    member_id: str = NO_MEMBER,
    *,
    group_id: str = GROUP,
    client_id: str = "client",
    session_ms: int = SESSION_MS,
    rebalance_ms: int = REBALANCE_MS,
    protocols: tuple[tuple[str, bytes], ...] | None = None,
    protocol_type: str = "consumer",
) -> JoinGroupRequest:
    if protocols is None:
        protocols = (("range", f"sub-{client_id}".encode()),)
    return JoinGroupRequest(
        group_id,
        session_ms,
        rebalance_ms,
        member_id,
        protocol_type,
        protocols,
        client_id,
        "/127.0.0.1",
    )


def join(h: Harness, member_id: str = NO_MEMBER, **kwargs: Any) -> asyncio.Task[JoinGroupResponse]:
    return asyncio.create_task(h.membership.join(join_request(member_id, **kwargs)))


def sync(
    h: Harness,
    member_id: str,
    generation_id: int,
    assignments: dict[str, bytes] | None = None,
    group_id: str = GROUP,
) -> asyncio.Task[SyncGroupResponse]:
    request = SyncGroupRequest(
        group_id, generation_id, member_id, tuple((assignments or {}).items())
    )
    return asyncio.create_task(h.membership.sync(request))


def heartbeat(h: Harness, member_id: str, generation_id: int, group_id: str = GROUP) -> Errors:
    return h.membership.heartbeat(HeartbeatRequest(group_id, generation_id, member_id)).error


def leave(h: Harness, member_id: str, group_id: str = GROUP) -> Errors:
    return h.membership.leave(LeaveGroupRequest(group_id, member_id)).error


async def answered(task: asyncio.Task[Any]) -> Any:
    """The task's result, after checking the loop had already answered it."""
    await settle()
    assert task.done(), "the request is still parked"
    return task.result()


async def still_parked(task: asyncio.Task[Any]) -> None:
    await settle()
    assert not task.done(), (
        f"the request was answered: {task.result() if not task.cancelled() else 'cancelled'}"
    )


def assignment_for(member_id: str) -> bytes:
    return f"assignment-of-{member_id}".encode()


async def stable_group(h: Harness, clients: tuple[str, ...] = ("a", "b")) -> tuple[list[str], int]:
    """Form a Stable group of ``clients`` (first one leading).

    Returns (member ids in join order, generation). Uses the initial delay if configured, else joins
    the first member alone and has it rejoin with the rest.
    """
    tasks = [join(h, client_id=c) for c in clients[:1]]
    await settle()
    if h.membership.config.group_initial_rebalance_delay_ms:
        tasks += [join(h, client_id=c) for c in clients[1:]]
        await settle()
        h.tick(h.membership.config.group_initial_rebalance_delay_ms)
        responses = [await answered(t) for t in tasks]
    else:
        first = await answered(tasks[0])
        if len(clients) > 1:
            rest = [join(h, client_id=c) for c in clients[1:]]
            await settle()
            rejoin = join(h, first.member_id, client_id=clients[0])
            responses = [await answered(rejoin)] + [await answered(t) for t in rest]
        else:
            responses = [first]
    assert {r.error for r in responses} == {Errors.NONE}
    members = [r.member_id for r in responses]
    generation = responses[0].generation_id
    leader = responses[0].leader_id
    assert leader == members[0]
    followers = [sync(h, m, generation) for m in members[1:]]
    await settle()
    leader_sync = sync(h, leader, generation, {m: assignment_for(m) for m in members})
    for task in [leader_sync, *followers]:
        assert (await answered(task)).error is Errors.NONE
    assert h.group().state is G.STABLE
    return members, generation


# ---------------------------------------------------------------------------- 1. the first member


def test_first_member_joining_with_no_initial_delay_leads_generation_1_at_once() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        response = await answered(join(h, client_id="c0"))
        assert response.error is Errors.NONE
        assert response.generation_id == 1
        assert response.protocol_name == "range"
        assert response.member_id.startswith("c0-")
        assert response.leader_id == response.member_id
        assert response.members == ((response.member_id, b"sub-c0"),)
        group = h.group()
        assert group.state is G.COMPLETING_REBALANCE
        assert group.generation_id == 1
        assert group.protocol_type == "consumer"
        assert h.persist.calls == []  # nothing is stored until the leader brings an assignment

    run(scenario)


def test_leader_sync_persists_its_assignment_once_and_makes_the_group_stable() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        joined = await answered(join(h, client_id="c0"))
        me = joined.member_id
        response = await answered(sync(h, me, 1, {me: b"p0,p1"}))
        assert response == SyncGroupResponse(Errors.NONE, b"p0,p1")
        assert h.group().state is G.STABLE
        assert h.group().members[me].assignment == b"p0,p1"
        assert len(h.persist.calls) == 1
        stored = h.persist.calls[0]
        assert (stored.group_id, stored.generation_id, stored.protocol, stored.leader_id) == (
            GROUP,
            1,
            "range",
            me,
        )
        assert stored.assignments == {me: b"p0,p1"}
        assert stored.value.members == (
            StoredMember(me, "c0", "/127.0.0.1", SESSION_MS, REBALANCE_MS, b"sub-c0", b"p0,p1"),
        )
        # Stable now: a repeated sync and a heartbeat are answered from memory, nothing is stored.
        assert (await answered(sync(h, me, 1))) == SyncGroupResponse(Errors.NONE, b"p0,p1")
        assert heartbeat(h, me, 1) is Errors.NONE
        assert len(h.persist.calls) == 1

    run(scenario)


def test_leader_sync_gives_members_it_left_out_an_empty_assignment() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        follower = sync(h, rb.member_id, 1)
        await still_parked(follower)
        leader = sync(h, ra.member_id, 1, {ra.member_id: b"x", "no-such-member": b"y"})
        assert (await answered(leader)).assignment == b"x"
        assert (await answered(follower)) == SyncGroupResponse(Errors.NONE, b"")
        assert h.persist.calls[0].assignments == {ra.member_id: b"x", rb.member_id: b""}

    run(scenario)


# ------------------------------------------------------------------ 2. the initial rebalance delay


def test_initial_delay_holds_the_first_join_until_a_tick_passes_the_delay() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        task = join(h, client_id="c0")
        await still_parked(task)
        assert h.group().state is G.PREPARING_REBALANCE
        h.tick(DELAY_MS - 1)
        await still_parked(task)
        h.tick(1)
        response = await answered(task)
        assert (response.error, response.generation_id, response.leader_id) == (
            Errors.NONE,
            1,
            response.member_id,
        )
        assert h.group().state is G.COMPLETING_REBALANCE

    run(scenario)


def test_member_joining_in_the_initial_delay_extends_it_and_both_end_in_one_generation() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        first = join(h, client_id="a")
        await settle()
        h.clock.advance(2000)
        second = join(h, client_id="b")
        await settle()
        h.tick(
            DELAY_MS - 2000
        )  # the first member's delay is over, but the second member restarted it
        await still_parked(first)
        await still_parked(second)
        h.tick(1999)
        await still_parked(first)
        h.tick(1)
        ra, rb = await answered(first), await answered(second)
        assert ra.error is Errors.NONE and rb.error is Errors.NONE
        assert ra.generation_id == rb.generation_id == 1
        assert ra.leader_id == rb.leader_id == ra.member_id
        assert dict(ra.members) == {ra.member_id: b"sub-a", rb.member_id: b"sub-b"}
        assert rb.members == ()
        assert h.group().state is G.COMPLETING_REBALANCE

    run(scenario)


def test_initial_delay_extensions_stop_at_the_rebalance_timeout() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        start = h.clock.now
        tasks = [join(h, client_id="a", rebalance_ms=5000)]
        await settle()
        for at, client in ((2500, "b"), (4900, "c")):
            h.clock.now = start + at
            tasks.append(join(h, client_id=client, rebalance_ms=5000))
            await settle()
        h.clock.now = start + 4999
        h.tick()
        for task in tasks:
            await still_parked(task)
        h.clock.now = start + 5000  # new members kept coming, but the wait is capped
        h.tick()
        responses = [await answered(t) for t in tasks]
        assert {r.generation_id for r in responses} == {1}
        assert len(responses[0].members) == 3

    run(scenario)


def test_existing_member_rejoining_during_the_initial_delay_does_not_extend_it() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        first = join(h, client_id="a")
        await settle()
        member_id = next(iter(h.group().members))
        h.clock.advance(2000)
        again = join(h, member_id, client_id="a")
        superseded = await answered(first)
        assert superseded.error is Errors.REBALANCE_IN_PROGRESS
        h.tick(DELAY_MS - 2000)
        response = await answered(again)
        assert (response.error, response.generation_id, response.member_id) == (
            Errors.NONE,
            1,
            member_id,
        )

    run(scenario)


# ------------------------------------------------------------------ 3. rebalancing a stable group


def test_second_member_joining_a_stable_group_triggers_rebalance_and_new_generation() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (a,), generation = await stable_group(h, ("a",))
        assert generation == 1
        b_join = join(h, client_id="b")
        await still_parked(b_join)
        assert h.group().state is G.PREPARING_REBALANCE
        # The old member learns of the rebalance from its heartbeat and its sync; it may commit.
        assert heartbeat(h, a, 1) is Errors.REBALANCE_IN_PROGRESS
        assert (await answered(sync(h, a, 1))).error is Errors.REBALANCE_IN_PROGRESS
        assert h.membership.commit_error(GROUP, 1, a) is None
        a_join = join(h, a, client_id="a")
        ra, rb = await answered(a_join), await answered(b_join)
        assert ra.error is Errors.NONE and rb.error is Errors.NONE
        assert ra.generation_id == rb.generation_id == 2
        assert ra.member_id == a and ra.leader_id == rb.leader_id == a
        assert dict(ra.members) == {a: b"sub-a", rb.member_id: b"sub-b"}
        assert rb.members == ()
        assert h.group().state is G.COMPLETING_REBALANCE
        # The follower's sync waits for the leader's.
        b_sync = sync(h, rb.member_id, 2)
        await still_parked(b_sync)
        assert heartbeat(h, a, 2) is Errors.REBALANCE_IN_PROGRESS
        a_sync = sync(h, a, 2, {a: b"p0", rb.member_id: b"p1"})
        assert (await answered(a_sync)) == SyncGroupResponse(Errors.NONE, b"p0")
        assert (await answered(b_sync)) == SyncGroupResponse(Errors.NONE, b"p1")
        assert h.group().state is G.STABLE
        assert [c.generation_id for c in h.persist.calls] == [1, 2]
        assert heartbeat(h, a, 2) is Errors.NONE and heartbeat(h, rb.member_id, 2) is Errors.NONE

    run(scenario)


def test_follower_rejoining_stable_group_unchanged_gets_its_generation_with_no_rebalance() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        response = await answered(join(h, b, client_id="b"))
        assert (response.error, response.generation_id, response.member_id, response.leader_id) == (
            Errors.NONE,
            generation,
            b,
            a,
        )
        assert response.members == ()
        assert h.group().state is G.STABLE

    run(scenario)


def test_leader_rejoining_a_stable_group_unchanged_triggers_a_rebalance() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        a_join = join(h, a, client_id="a")
        await still_parked(a_join)
        assert h.group().state is G.PREPARING_REBALANCE
        b_join = join(h, b, client_id="b")
        ra, rb = await answered(a_join), await answered(b_join)
        assert ra.generation_id == rb.generation_id == generation + 1
        assert ra.leader_id == a

    run(scenario)


def test_follower_rejoining_with_new_metadata_triggers_a_rebalance_and_the_leader_sees_it() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        b_join = join(h, b, client_id="b", protocols=(("range", b"new-subscription"),))
        await still_parked(b_join)
        assert h.group().state is G.PREPARING_REBALANCE
        ra = await answered(join(h, a, client_id="a"))
        assert ra.generation_id == generation + 1
        assert dict(ra.members)[b] == b"new-subscription"
        assert (await answered(b_join)).generation_id == generation + 1

    run(scenario)


def test_member_rejoining_unchanged_in_completing_rebalance_gets_the_same_generation() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        again_a = await answered(join(h, ra.member_id, client_id="a"))
        again_b = await answered(join(h, rb.member_id, client_id="b"))
        assert (again_a.generation_id, again_a.members) == (1, ra.members)
        assert (again_b.generation_id, again_b.members) == (1, ())
        assert h.group().state is G.COMPLETING_REBALANCE

    run(scenario)


def test_new_member_in_completing_rebalance_fails_parked_syncs_with_rebalance_in_progress() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await still_parked(b_sync)
        c_join = join(h, client_id="c")
        assert (await answered(b_sync)).error is Errors.REBALANCE_IN_PROGRESS
        assert h.group().state is G.PREPARING_REBALANCE
        await still_parked(c_join)
        assert (
            await answered(sync(h, ra.member_id, 1, {ra.member_id: b"x"}))
        ).error is Errors.REBALANCE_IN_PROGRESS
        assert h.persist.calls == []

    run(scenario)


def test_a_newer_join_from_the_same_member_supersedes_its_parked_one() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        first = join(h, a, client_id="a")
        await still_parked(first)
        second = join(h, a, client_id="a")
        assert (await answered(first)).error is Errors.REBALANCE_IN_PROGRESS
        await still_parked(second)
        join(h, b, client_id="b")
        assert (await answered(second)).generation_id == generation + 1

    run(scenario)


# ---------------------------------------------------------------------------- 4. session expiry


def test_member_silent_past_its_session_timeout_is_removed_and_the_rest_rejoin_alone() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        for _ in range(4):  # b keeps heartbeating, a has gone quiet
            h.tick(SESSION_MS // 4)
            assert heartbeat(h, b, generation) is Errors.NONE
        assert a in h.group().members
        h.tick(1)
        assert a not in h.group().members
        assert h.group().state is G.PREPARING_REBALANCE
        assert h.group().leader_id == b
        assert heartbeat(h, b, generation) is Errors.REBALANCE_IN_PROGRESS
        assert heartbeat(h, a, generation) is Errors.UNKNOWN_MEMBER_ID
        rb = await answered(join(h, b, client_id="b"))
        assert (rb.error, rb.generation_id, rb.leader_id) == (Errors.NONE, generation + 1, b)
        assert rb.members == ((b, b"sub-b"),)

    run(scenario)


def test_member_is_kept_while_its_session_timeout_has_not_elapsed() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (a,), _ = await stable_group(h, ("a",))
        h.tick(SESSION_MS - 1)
        assert h.group().has_member(a) and h.group().state is G.STABLE
        h.tick(2)
        assert not h.group().has_member(a)

    run(scenario)


def test_each_member_expires_after_its_own_session_timeout() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a = join(h, client_id="a", session_ms=7000)
        b = join(h, client_id="b", session_ms=20_000)
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await settle()
        await answered(sync(h, ra.member_id, 1, {}))
        await answered(b_sync)
        h.tick(7001)
        assert not h.group().has_member(ra.member_id)
        assert h.group().has_member(rb.member_id)

    run(scenario)


def test_members_parked_in_a_join_are_not_expired_while_the_rebalance_waits() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (a, b), generation = await stable_group(h)
        h.tick(1000)
        a_join = join(h, a, client_id="a")
        await still_parked(a_join)
        for _ in range(3):  # b heartbeats (and is told to rejoin) but does not rejoin for a while
            h.tick(SESSION_MS // 2)
            assert heartbeat(h, b, generation) is Errors.REBALANCE_IN_PROGRESS
        assert h.group().has_member(a)
        await still_parked(a_join)
        b_join = join(h, b, client_id="b")
        assert (await answered(a_join)).generation_id == generation + 1
        assert (await answered(b_join)).generation_id == generation + 1

    run(scenario)


def test_members_that_waited_in_a_long_rebalance_get_a_fresh_session_when_it_completes() -> None:
    # Kafka schedules every member's next heartbeat deadline when the join completes
    # (completeAndScheduleNextHeartbeatExpiration): members parked for longer than their session
    # timeout must not be expired by the first tick after the join, before they could even sync.
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (a, b), generation = await stable_group(h)
        a_join = join(h, a, client_id="a")
        await still_parked(a_join)
        h.tick(SESSION_MS // 2)
        assert heartbeat(h, b, generation) is Errors.REBALANCE_IN_PROGRESS
        h.tick(SESSION_MS // 2 + 1000)  # a has waited longer than its session timeout
        b_join = join(h, b, client_id="b")
        ra, rb = await answered(a_join), await answered(b_join)
        assert ra.generation_id == rb.generation_id == generation + 1
        h.tick(1)
        assert h.group().has_member(a) and h.group().has_member(b)
        assert h.group().state is G.COMPLETING_REBALANCE
        h.tick(SESSION_MS - 2)
        assert h.group().has_member(a)
        b_sync = sync(h, b, generation + 1)
        await settle()
        a_sync = sync(h, a, generation + 1, {a: b"x", b: b"y"})
        assert (await answered(a_sync)).error is Errors.NONE
        assert (await answered(b_sync)).error is Errors.NONE

    run(scenario)


def test_members_that_waited_through_the_initial_delay_are_not_expired_right_after_it() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=8000, min_session_ms=1000)
        first = join(h, client_id="a", session_ms=6000)
        await settle()
        h.tick(8000)
        response = await answered(first)
        h.tick(1)
        assert h.group().has_member(response.member_id)

    run(scenario)


def test_member_parked_in_sync_is_kept_while_the_leader_is_slow_to_send_the_assignment() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a = join(h, client_id="a", session_ms=30_000)
        b = join(h, client_id="b", session_ms=SESSION_MS)
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await still_parked(b_sync)
        h.tick(SESSION_MS + 5000)
        assert h.group().has_member(rb.member_id)
        assert h.group().state is G.COMPLETING_REBALANCE
        await still_parked(b_sync)
        leader_sync = sync(h, ra.member_id, 1, {rb.member_id: b"y"})
        assert (await answered(leader_sync)).error is Errors.NONE
        assert (await answered(b_sync)) == SyncGroupResponse(Errors.NONE, b"y")
        h.tick(SESSION_MS - 1)  # the session runs again from the end of the sync
        assert h.group().has_member(rb.member_id) and h.group().state is G.STABLE
        h.tick(2)
        assert not h.group().has_member(rb.member_id)

    run(scenario)


def test_expiry_of_a_member_during_completing_rebalance_fails_parked_syncs_and_rebalances() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        h.tick(SESSION_MS // 2)
        b_sync = sync(h, rb.member_id, 1)  # b syncs (refreshing its session), the leader never does
        await still_parked(b_sync)
        h.tick(SESSION_MS // 2 + 1)
        assert not h.group().has_member(ra.member_id)
        assert (await answered(b_sync)).error is Errors.REBALANCE_IN_PROGRESS
        assert h.group().state is G.PREPARING_REBALANCE
        assert h.group().leader_id == rb.member_id
        again = await answered(join(h, rb.member_id, client_id="b"))
        assert (again.generation_id, again.leader_id) == (2, rb.member_id)

    run(scenario)


def test_session_expiry_of_the_last_member_empties_the_group_and_persists_it() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (_a,), generation = await stable_group(h, ("a",))
        h.tick(SESSION_MS + 1)
        await settle()
        group = h.group()
        assert (group.state, group.generation_id, group.is_empty()) == (
            G.EMPTY,
            generation + 1,
            True,
        )
        assert group.protocol_name is None
        stored = h.persist.calls[-1]
        assert (stored.state, stored.generation_id, stored.assignments) == (
            G.EMPTY,
            generation + 1,
            {},
        )

    run(scenario)


# ------------------------------------------------------------------ 5. the rebalance timeout


def test_member_that_does_not_rejoin_is_dropped_when_the_rebalance_deadline_passes() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        c_join = join(h, client_id="c")
        a_join = join(h, a, client_id="a")
        await still_parked(a_join)
        for _ in range(3):  # b stays alive by heartbeating but never rejoins
            h.tick(REBALANCE_MS // 4)
            assert heartbeat(h, b, generation) is Errors.REBALANCE_IN_PROGRESS
        h.tick(REBALANCE_MS // 4 - 1)
        await still_parked(a_join)
        await still_parked(c_join)
        h.tick(1)
        ra, rc = await answered(a_join), await answered(c_join)
        assert ra.generation_id == rc.generation_id == generation + 1
        assert ra.leader_id == a
        assert set(dict(ra.members)) == {a, rc.member_id}
        assert not h.group().has_member(b)
        assert heartbeat(h, b, generation) is Errors.UNKNOWN_MEMBER_ID
        assert (await answered(sync(h, b, generation + 1))).error is Errors.UNKNOWN_MEMBER_ID

    run(scenario)


def test_rebalance_deadline_is_the_largest_rebalance_timeout_of_the_members() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a = join(h, client_id="a", rebalance_ms=5000)
        b = join(h, client_id="b", rebalance_ms=60_000, session_ms=120_000)
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await settle()
        await answered(sync(h, ra.member_id, 1, {}))
        await answered(b_sync)
        a_join = join(h, ra.member_id, client_id="a", rebalance_ms=5000)
        await settle()
        h.tick(59_999)
        await still_parked(a_join)
        h.tick(1)
        response = await answered(a_join)
        assert (response.generation_id, response.members) == (2, ((ra.member_id, b"sub-a"),))

    run(scenario)


def test_leader_that_does_not_rejoin_is_replaced_by_a_member_that_did() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS, max_session_ms=600_000)
        a = join(h, client_id="a", session_ms=100_000)
        b = join(h, client_id="b", session_ms=100_000)
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await settle()
        await answered(sync(h, ra.member_id, 1, {}))
        await answered(b_sync)
        b_join = join(
            h, rb.member_id, client_id="b", session_ms=100_000, protocols=(("range", b"changed"),)
        )
        await still_parked(b_join)
        h.tick(REBALANCE_MS)
        response = await answered(b_join)
        assert (response.generation_id, response.leader_id) == (2, rb.member_id)
        assert response.members == ((rb.member_id, b"changed"),)
        assert not h.group().has_member(ra.member_id)

    run(scenario)


def test_rebalance_that_nobody_rejoins_ends_empty_at_the_deadline_and_is_persisted() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS, max_session_ms=600_000)
        a = join(h, client_id="a", session_ms=100_000)
        b = join(h, client_id="b", session_ms=100_000)
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await settle()
        await answered(sync(h, ra.member_id, 1, {}))
        await answered(b_sync)
        b_join = join(
            h, rb.member_id, client_id="b", session_ms=100_000, protocols=(("range", b"changed"),)
        )
        await still_parked(b_join)
        assert leave(h, rb.member_id) is Errors.NONE
        assert (await answered(b_join)).error is Errors.UNKNOWN_MEMBER_ID
        assert h.group().state is G.PREPARING_REBALANCE
        h.tick(REBALANCE_MS)
        await settle()
        assert (h.group().state, h.group().generation_id, h.group().is_empty()) == (
            G.EMPTY,
            2,
            True,
        )
        assert (h.persist.calls[-1].state, h.persist.calls[-1].generation_id) == (G.EMPTY, 2)

    run(scenario)


# ---------------------------------------------------------------------------- 6. LeaveGroup


def test_leave_group_removes_the_member_and_rebalances_the_rest() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b, c), generation = await stable_group(h, ("a", "b", "c"))
        assert leave(h, b) is Errors.NONE
        assert not h.group().has_member(b)
        assert h.group().state is G.PREPARING_REBALANCE
        assert heartbeat(h, a, generation) is Errors.REBALANCE_IN_PROGRESS
        assert heartbeat(h, b, generation) is Errors.UNKNOWN_MEMBER_ID
        ra, rc = join(h, a, client_id="a"), join(h, c, client_id="c")
        ra, rc = await answered(ra), await answered(rc)
        assert ra.generation_id == rc.generation_id == generation + 1
        assert set(dict(ra.members)) == {a, c}

    run(scenario)


def test_leader_leaving_hands_leadership_to_another_member() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        assert leave(h, a) is Errors.NONE
        response = await answered(join(h, b, client_id="b"))
        assert (response.leader_id, response.generation_id, response.members) == (
            b,
            generation + 1,
            ((b, b"sub-b"),),
        )

    run(scenario)


def test_leave_while_the_others_already_rejoined_completes_the_join() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        c_join, a_join = join(h, client_id="c"), join(h, a, client_id="a")
        await still_parked(a_join)
        assert leave(h, b) is Errors.NONE
        ra, rc = await answered(a_join), await answered(c_join)
        assert ra.generation_id == rc.generation_id == generation + 1
        assert set(dict(ra.members)) == {a, rc.member_id}

    run(scenario)


def test_leave_during_completing_rebalance_fails_parked_syncs() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b, c = join(h, client_id="a"), join(h, client_id="b"), join(h, client_id="c")
        await settle()
        h.tick(DELAY_MS)
        _, rb, rc = await answered(a), await answered(b), await answered(c)
        b_sync = sync(h, rb.member_id, 1)
        await still_parked(b_sync)
        assert leave(h, rc.member_id) is Errors.NONE
        assert (await answered(b_sync)).error is Errors.REBALANCE_IN_PROGRESS
        assert h.group().state is G.PREPARING_REBALANCE

    run(scenario)


def test_leave_of_an_unknown_member_or_group_is_unknown_member_id() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        assert leave(h, "nobody", group_id="no-such-group") is Errors.UNKNOWN_MEMBER_ID
        (a,), _generation = await stable_group(h, ("a",))
        assert leave(h, "nobody") is Errors.UNKNOWN_MEMBER_ID
        assert leave(h, NO_MEMBER) is Errors.UNKNOWN_MEMBER_ID
        assert h.group().state is G.STABLE and h.group().has_member(a)
        assert "no-such-group" not in h.membership.groups

    run(scenario)


def test_last_member_leaving_empties_the_group_bumps_the_generation_and_persists_it() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (a,), generation = await stable_group(h, ("a",))
        assert leave(h, a) is Errors.NONE
        await settle()
        group = h.group()
        assert (group.state, group.generation_id, group.leader_id, group.protocol_name) == (
            G.EMPTY,
            generation + 1,
            None,
            None,
        )
        assert len(h.persist.calls) == 2
        stored = h.persist.calls[-1]
        assert (stored.state, stored.generation_id, stored.leader_id, stored.value.members) == (
            G.EMPTY,
            generation + 1,
            None,
            (),
        )
        # The admin may now commit; a new member starts the next generation.
        assert h.membership.commit_error(GROUP, NO_GENERATION, NO_MEMBER) is None
        again = await answered(join(h, client_id="z"))
        assert again.generation_id == generation + 2

    run(scenario)


def test_only_member_leaving_during_the_initial_delay_leaves_an_empty_group_after_it() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        task = join(h, client_id="a")
        await settle()
        member_id = next(iter(h.group().members))
        assert leave(h, member_id) is Errors.NONE
        assert (await answered(task)).error is Errors.UNKNOWN_MEMBER_ID
        h.tick(DELAY_MS)
        await settle()
        assert (h.group().state, h.group().generation_id) == (G.EMPTY, 1)

    run(scenario)


# ---------------------------------------------------------------------------- 7. request errors


@pytest.mark.parametrize("member_id", [NO_MEMBER, "someone"])
def test_join_with_an_empty_group_id_is_invalid_group_id(member_id: str) -> None:
    async def scenario() -> None:
        h = harness()
        response = await answered(join(h, member_id, group_id=""))
        assert response.error is Errors.INVALID_GROUP_ID
        assert response.error_message
        assert h.membership.groups == {}

    run(scenario)


@pytest.mark.parametrize("session_ms", [MIN_SESSION_MS - 1, MAX_SESSION_MS + 1, 0, -1])
def test_join_with_a_session_timeout_outside_the_broker_range_is_invalid_session_timeout(
    session_ms: int,
) -> None:
    async def scenario() -> None:
        h = harness()
        response = await answered(join(h, session_ms=session_ms))
        assert response.error is Errors.INVALID_SESSION_TIMEOUT
        assert str(session_ms) in (response.error_message or "")
        assert GROUP not in h.membership.groups

    run(scenario)


@pytest.mark.parametrize("session_ms", [MIN_SESSION_MS, MAX_SESSION_MS])
def test_join_with_a_session_timeout_at_the_range_bounds_is_accepted(session_ms: int) -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        assert (await answered(join(h, session_ms=session_ms))).error is Errors.NONE

    run(scenario)


def test_join_with_an_unknown_member_id_is_unknown_member_id() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        response = await answered(join(h, "ghost"))
        assert response.error is Errors.UNKNOWN_MEMBER_ID
        assert GROUP not in h.membership.groups  # a refused join creates no group
        (a,), generation = await stable_group(h, ("a",))
        assert (await answered(join(h, "ghost"))).error is Errors.UNKNOWN_MEMBER_ID
        assert (h.group().state, h.group().generation_id, list(h.group().members)) == (
            G.STABLE,
            generation,
            [a],
        )

    run(scenario)


def test_join_sharing_no_assignor_with_the_group_is_inconsistent_group_protocol() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (_a,), _generation = await stable_group(h, ("a",))
        response = await answered(join(h, client_id="b", protocols=(("roundrobin", b"s"),)))
        assert response.error is Errors.INCONSISTENT_GROUP_PROTOCOL
        assert "roundrobin" in (response.error_message or "")
        # One assignor in common is enough.
        both = join(h, client_id="c", protocols=(("roundrobin", b"s"), ("range", b"t")))
        await still_parked(both)
        assert h.group().state is G.PREPARING_REBALANCE

    run(scenario)


def test_join_with_another_protocol_type_is_inconsistent_group_protocol() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        await stable_group(h, ("a",))
        response = await answered(join(h, client_id="b", protocol_type="connect"))
        assert response.error is Errors.INCONSISTENT_GROUP_PROTOCOL
        assert h.group().state is G.STABLE and len(h.group().members) == 1

    run(scenario)


def test_join_offering_no_assignor_is_inconsistent_group_protocol() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        response = await answered(join(h, protocols=()))
        assert response.error is Errors.INCONSISTENT_GROUP_PROTOCOL
        assert GROUP not in h.membership.groups

    run(scenario)


def test_rejoin_with_assignors_the_others_lack_is_inconsistent_group_protocol() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (_a, b), _generation = await stable_group(h)
        response = await answered(join(h, b, client_id="b", protocols=(("roundrobin", b"s"),)))
        assert response.error is Errors.INCONSISTENT_GROUP_PROTOCOL
        assert h.group().state is G.STABLE
        assert h.group().members[b].protocols == (("range", b"sub-b"),)

    run(scenario)


def test_group_picks_the_leaders_preferred_assignor_among_those_all_members_offer() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a = join(h, client_id="a", protocols=(("roundrobin", b"a-rr"), ("range", b"a-range")))
        b = join(h, client_id="b", protocols=(("range", b"b-range"), ("roundrobin", b"b-rr")))
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        assert ra.protocol_name == rb.protocol_name == "roundrobin"
        assert dict(ra.members) == {ra.member_id: b"a-rr", rb.member_id: b"b-rr"}

    run(scenario)


def test_sync_and_heartbeat_with_an_old_generation_are_illegal_generation() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        assert leave(h, b) is Errors.NONE
        await answered(join(h, a, client_id="a"))  # generation + 1, CompletingRebalance
        for stale in (generation, generation + 5, NO_GENERATION):
            assert heartbeat(h, a, stale) is Errors.ILLEGAL_GENERATION
            response = await answered(sync(h, a, stale, {a: b"x"}))
            assert response.error is Errors.ILLEGAL_GENERATION
            assert str(generation + 1) in (response.error_message or "")
        assert h.group().state is G.COMPLETING_REBALANCE
        assert len(h.persist.calls) == 1

    run(scenario)


def test_sync_and_heartbeat_from_unknown_members_or_groups_are_unknown_member_id() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (a,), generation = await stable_group(h, ("a",))
        assert heartbeat(h, "ghost", generation) is Errors.UNKNOWN_MEMBER_ID
        assert heartbeat(h, a, generation, group_id="other") is Errors.UNKNOWN_MEMBER_ID
        assert (await answered(sync(h, "ghost", generation))).error is Errors.UNKNOWN_MEMBER_ID
        assert (
            await answered(sync(h, a, generation, group_id="other"))
        ).error is Errors.UNKNOWN_MEMBER_ID

    run(scenario)


# ---------------------------------------------------------------------------- 8. commit fencing


def test_commit_from_a_member_of_the_current_generation_of_a_stable_group_is_accepted() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        assert h.membership.commit_error(GROUP, generation, a) is None
        assert h.membership.commit_error(GROUP, generation, b) is None

    run(scenario)


def test_commit_from_an_old_generation_is_illegal_generation() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        assert leave(h, b) is Errors.NONE
        ra = await answered(join(h, a, client_id="a"))
        await answered(sync(h, a, ra.generation_id, {a: b"x"}))
        error = h.membership.commit_error(GROUP, generation, a)
        assert error is not None and error[0] is Errors.ILLEGAL_GENERATION
        assert h.membership.commit_error(GROUP, ra.generation_id, a) is None

    run(scenario)


def test_commit_during_completing_rebalance_is_rebalance_in_progress() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        response = await answered(join(h, client_id="a"))
        error = h.membership.commit_error(GROUP, response.generation_id, response.member_id)
        assert error is not None and error[0] is Errors.REBALANCE_IN_PROGRESS

    run(scenario)


def test_commit_during_preparing_rebalance_from_the_previous_generation_is_accepted() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (_a, b), generation = await stable_group(h)
        join(h, client_id="c")
        await settle()
        assert h.group().state is G.PREPARING_REBALANCE
        assert h.membership.commit_error(GROUP, generation, b) is None

    run(scenario)


def test_commit_from_an_unknown_member_of_a_group_with_members_is_unknown_member_id() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        _, generation = await stable_group(h, ("a",))
        error = h.membership.commit_error(GROUP, generation, "ghost")
        assert error is not None and error[0] is Errors.UNKNOWN_MEMBER_ID

    run(scenario)


def test_admin_commit_is_accepted_for_an_unknown_or_empty_group_refused_with_members() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        assert h.membership.commit_error("never-seen", NO_GENERATION, NO_MEMBER) is None
        (a,), _ = await stable_group(h, ("a",))
        error = h.membership.commit_error(GROUP, NO_GENERATION, NO_MEMBER)
        assert error is not None and error[0] is Errors.UNKNOWN_MEMBER_ID
        assert "1 active members" in error[1]
        assert leave(h, a) is Errors.NONE
        await settle()
        assert h.group().state is G.EMPTY
        assert h.membership.commit_error(GROUP, NO_GENERATION, NO_MEMBER) is None

    run(scenario)


def test_admin_commit_is_refused_during_a_rebalance() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        join(h, client_id="a")
        await settle()
        assert h.group().state is G.PREPARING_REBALANCE
        error = h.membership.commit_error(GROUP, NO_GENERATION, NO_MEMBER)
        assert error is not None and error[0] is Errors.UNKNOWN_MEMBER_ID

    run(scenario)


def test_commit_with_a_generation_to_an_unknown_group_is_illegal_generation() -> None:
    error = GroupMembership(MembershipConfig(), FakeClock(), FakePersist()).commit_error(
        "never-seen", 3, "m"
    )
    assert error is not None and error[0] is Errors.ILLEGAL_GENERATION
    assert "never-seen" in error[1]


# ------------------------------------------------------------- 9. persisting the assignment fails


def test_persist_failure_in_the_leader_sync_fails_every_sync_and_restarts_the_rebalance() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await still_parked(b_sync)
        h.persist.errors = [Errors.NOT_COORDINATOR]
        a_sync = sync(h, ra.member_id, 1, {ra.member_id: b"x", rb.member_id: b"y"})
        assert (await answered(a_sync)).error is Errors.NOT_COORDINATOR
        assert (await answered(b_sync)).error is Errors.NOT_COORDINATOR
        assert len(h.persist.calls) == 1
        group = h.group()
        assert group.state is G.PREPARING_REBALANCE
        assert {m.assignment for m in group.members.values()} == {b""}
        assert heartbeat(h, ra.member_id, 1) is Errors.REBALANCE_IN_PROGRESS
        # Both rejoin and the next attempt sticks.
        ja, jb = join(h, ra.member_id, client_id="a"), join(h, rb.member_id, client_id="b")
        ja, jb = await answered(ja), await answered(jb)
        assert ja.generation_id == jb.generation_id == 2
        b_sync = sync(h, rb.member_id, 2)
        await settle()
        assert (await answered(sync(h, ra.member_id, 2, {rb.member_id: b"y"}))).error is Errors.NONE
        assert (await answered(b_sync)) == SyncGroupResponse(Errors.NONE, b"y")
        assert h.group().state is G.STABLE

    run(scenario)


def test_members_that_do_not_rejoin_after_a_persist_failure_are_dropped_at_the_deadline() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        response = await answered(join(h, client_id="a"))
        h.persist.errors = [Errors.REQUEST_TIMED_OUT]
        assert (
            await answered(sync(h, response.member_id, 1, {}))
        ).error is Errors.REQUEST_TIMED_OUT
        h.tick(REBALANCE_MS)
        await settle()
        assert (h.group().state, h.group().generation_id) == (G.EMPTY, 2)

    run(scenario)


def test_rebalance_starting_while_the_assignment_is_written_wins_over_it() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        h.persist.gate = asyncio.Event()
        a_sync = sync(h, ra.member_id, 1, {ra.member_id: b"x", rb.member_id: b"y"})
        await still_parked(a_sync)
        c_join = join(h, client_id="c")
        await settle()
        assert h.group().state is G.PREPARING_REBALANCE
        h.persist.gate.set()  # the leader's answer follows the write it is waiting for
        assert (await answered(a_sync)).error is Errors.REBALANCE_IN_PROGRESS
        assert h.group().state is G.PREPARING_REBALANCE
        assert {m.assignment for m in h.group().members.values()} == {b""}
        await still_parked(c_join)

    run(scenario)


# ------------------------------------------------------------- 10. restoring from the offsets log


def stored_group(generation: int = 7, leader: str | None = "m1") -> GroupValue:
    members = (
        StoredMember("m1", "c1", "/10.0.0.1", 10_000, 30_000, b"sub-1", b"assign-1"),
        StoredMember("m2", "c2", "/10.0.0.2", 15_000, 30_000, b"sub-2", b"assign-2"),
    )
    return GroupValue("consumer", generation, "range", leader, 123, members)


def test_restore_with_members_resumes_a_stable_group_with_generation_leader_assignments() -> None:
    async def scenario() -> None:
        h = harness()
        h.membership.restore(GROUP, stored_group(leader="m2"))
        group = h.group()
        assert (
            group.state,
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            group.protocol_type,
        ) == (G.STABLE, 7, "range", "m2", "consumer")
        assert {m: meta.assignment for m, meta in group.members.items()} == {
            "m1": b"assign-1",
            "m2": b"assign-2",
        }
        m1 = group.members["m1"]
        assert (
            m1.client_id,
            m1.client_host,
            m1.session_timeout_ms,
            m1.rebalance_timeout_ms,
            m1.protocols,
        ) == ("c1", "/10.0.0.1", 10_000, 30_000, (("range", b"sub-1"),))
        assert stored_members(group) == stored_group().members
        assert h.persist.calls == []

    run(scenario)


def test_restored_members_can_heartbeat_sync_commit_and_rejoin_in_their_generation() -> None:
    async def scenario() -> None:
        h = harness()
        h.membership.restore(GROUP, stored_group())
        assert heartbeat(h, "m1", 7) is Errors.NONE
        assert heartbeat(h, "m2", 6) is Errors.ILLEGAL_GENERATION
        assert (await answered(sync(h, "m2", 7))) == SyncGroupResponse(Errors.NONE, b"assign-2")
        assert h.membership.commit_error(GROUP, 7, "m1") is None
        follower = await answered(join(h, "m2", client_id="c2", protocols=(("range", b"sub-2"),)))
        assert (follower.error, follower.generation_id, follower.leader_id) == (
            Errors.NONE,
            7,
            "m1",
        )
        assert h.group().state is G.STABLE

    run(scenario)


def test_restored_members_get_a_fresh_session_and_expire_if_they_never_heartbeat() -> None:
    async def scenario() -> None:
        h = harness()
        h.clock.advance(1_000_000)  # long after the group was stored
        h.membership.restore(GROUP, stored_group())
        h.tick(9_999)
        assert set(h.group().members) == {"m1", "m2"}
        assert heartbeat(h, "m2", 7) is Errors.NONE
        h.tick(2)
        assert set(h.group().members) == {"m2"}
        assert h.group().leader_id == "m2"
        assert h.group().state is G.PREPARING_REBALANCE

    run(scenario)


def test_restore_without_the_stored_leader_keeps_a_valid_leader() -> None:
    h = harness()
    h.membership.restore(GROUP, stored_group(leader="gone"))
    assert h.group().leader_id in {"m1", "m2"}
    h.membership.restore("other", stored_group(leader=None))
    assert h.group("other").leader_id in {"m1", "m2"}


def test_restore_with_no_members_gives_an_empty_group_that_continues_its_generations() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        h.membership.restore(GROUP, GroupValue("consumer", 4, None, None, 0, ()))
        group = h.group()
        assert (group.state, group.generation_id, group.is_empty(), group.leader_id) == (
            G.EMPTY,
            4,
            True,
            None,
        )
        assert h.membership.commit_error(GROUP, NO_GENERATION, NO_MEMBER) is None
        response = await answered(join(h, client_id="a"))
        assert (response.error, response.generation_id) == (Errors.NONE, 5)

    run(scenario)


def test_a_persisted_group_restored_by_another_coordinator_carries_on() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        (a, b), generation = await stable_group(h)
        value = h.persist.calls[-1].value
        h2 = harness(delay_ms=DELAY_MS)
        h2.membership.restore(GROUP, value)
        group = h2.group()
        assert (group.state, group.generation_id, group.leader_id, group.protocol_name) == (
            G.STABLE,
            generation,
            a,
            "range",
        )
        assert {m: meta.assignment for m, meta in group.members.items()} == {
            a: assignment_for(a),
            b: assignment_for(b),
        }
        assert heartbeat(h2, b, generation) is Errors.NONE
        ra = join(
            h2, a, client_id="a"
        )  # the leader rejoining rebalances, with the stored subscriptions
        rb = join(h2, b, client_id="b")
        ra, rb = await answered(ra), await answered(rb)
        assert ra.generation_id == generation + 1
        assert dict(ra.members) == {a: b"sub-a", b: b"sub-b"}

    run(scenario)


# ---------------------------------------------------------------------------- 11. unloading


def test_unload_answers_parked_joins_with_not_coordinator_and_forgets_the_group() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await still_parked(a)
        group = h.group()
        h.membership.unload(GROUP)
        for task in (a, b):
            response = await answered(task)
            assert response.error is Errors.NOT_COORDINATOR
        assert GROUP not in h.membership.groups
        assert group.state is G.DEAD
        h.tick(DELAY_MS)  # the old deadline does nothing
        assert GROUP not in h.membership.groups
        assert h.persist.calls == []

    run(scenario)


def test_unload_answers_parked_syncs_with_not_coordinator() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=DELAY_MS)
        a, b = join(h, client_id="a"), join(h, client_id="b")
        await settle()
        h.tick(DELAY_MS)
        ra, rb = await answered(a), await answered(b)
        b_sync = sync(h, rb.member_id, 1)
        await still_parked(b_sync)
        h.membership.unload(GROUP)
        assert (await answered(b_sync)).error is Errors.NOT_COORDINATOR
        assert heartbeat(h, ra.member_id, 1) is Errors.UNKNOWN_MEMBER_ID
        assert (await answered(sync(h, ra.member_id, 1))).error is Errors.UNKNOWN_MEMBER_ID
        assert h.membership.commit_error(GROUP, NO_GENERATION, NO_MEMBER) is None

    run(scenario)


def test_unload_while_the_assignment_is_written_answers_the_leader_not_coordinator() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        response = await answered(join(h, client_id="a"))
        h.persist.gate = asyncio.Event()
        leader_sync = sync(h, response.member_id, 1, {response.member_id: b"x"})
        await still_parked(leader_sync)
        group = h.group()
        h.membership.unload(GROUP)
        h.persist.gate.set()  # the leader's answer follows the write it is waiting for
        assert (await answered(leader_sync)).error is Errors.NOT_COORDINATOR
        assert group.state is G.DEAD
        assert GROUP not in h.membership.groups

    run(scenario)


def test_unload_of_an_unknown_group_does_nothing() -> None:
    h = harness()
    h.membership.unload("never-seen")
    assert h.membership.groups == {}


def test_group_can_start_afresh_after_it_was_unloaded_and_reloaded() -> None:
    async def scenario() -> None:
        h = harness(delay_ms=0)
        (a,), generation = await stable_group(h, ("a",))
        value = h.persist.calls[-1].value
        h.membership.unload(GROUP)
        h.membership.restore(GROUP, value)
        assert heartbeat(h, a, generation) is Errors.NONE
        assert h.group().state is G.STABLE

    run(scenario)
