"""The group membership protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and member expiry.

This is the request handling of Kafka's ``GroupCoordinator`` over the ``GroupMetadata`` state
machine, with no Ray and no log: time comes from an injected clock, persistence from an injected
coroutine, and parked requests are asyncio futures. The coordinator actor drives it from its single
event loop, so each handler runs to its first ``await`` without interleaving; after an ``await``
(persisting a group) the handler re-checks that the group is still in the generation it started
with.

Timers are deadlines checked by ``tick``, which the coordinator calls periodically: a member whose
last heartbeat is older than its session timeout is removed, and a rebalance whose members have
not all rejoined completes at its deadline without them (Kafka's session and rebalance timeouts,
KIP-62).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from rafka.groups.group_metadata import (
    GroupMetadata,
    GroupState,
    MemberMetadata,
    new_member_id,
    validate_group_id,
)
from rafka.groups.offsets_codec import GroupValue, StoredMember
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.groups import (
    NO_GENERATION,
    NO_MEMBER,
    GroupResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)

PersistGroup = Callable[[GroupMetadata], Coroutine[Any, Any, Errors]]
"""Writes a group's record to the offsets log; the error its members should see."""

ParkKey = tuple[str, str]
"""(group id, member id) of a parked JoinGroup or SyncGroup."""

R = TypeVar("R")


@dataclass(frozen=True)
class MembershipConfig:
    """The broker's group settings (Kafka's ``group.*`` names in snake_case)."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 300_000
    group_initial_rebalance_delay_ms: int = 3000


class GroupMembership:
    """Every group one coordinator owns, and the requests parked on them."""

    def __init__(
        self, config: MembershipConfig, clock: Callable[[], int], persist: PersistGroup
    ) -> None:
        self.config = config
        self.clock = clock
        self.persist = persist
        self.groups: dict[str, GroupMetadata] = {}
        self._joins: dict[ParkKey, asyncio.Future[JoinGroupResponse]] = {}
        self._syncs: dict[ParkKey, asyncio.Future[SyncGroupResponse]] = {}
        # group -> (deadline ms, whether the deadline is the initial delay that new members extend)
        self._join_deadlines: dict[str, tuple[int, bool]] = {}
        self._rebalance_started: dict[str, int] = {}
        self._background: set[asyncio.Task[Errors]] = set()
        self.rebalances = 0
        """Generations started since this coordinator began (Kafka's completed rebalances)."""

    # ------------------------------------------------------------------ JoinGroup

    async def join(self, request: JoinGroupRequest) -> JoinGroupResponse:
        """Admit or re-admit a member; resolves when the join phase of the rebalance completes."""
        try:
            validate_group_id(request.group_id)
        except RafkaError as exc:
            return JoinGroupResponse(exc.error, error_message=exc.message)
        low, high = (
            self.config.group_min_session_timeout_ms,
            self.config.group_max_session_timeout_ms,
        )
        if not low <= request.session_timeout_ms <= high:
            return JoinGroupResponse(
                Errors.INVALID_SESSION_TIMEOUT,
                error_message=(
                    f"session_timeout_ms {request.session_timeout_ms} is outside the broker's "
                    f"range [{low}, {high}] "
                    "(group_min_session_timeout_ms, group_max_session_timeout_ms)"
                ),
            )
        if not request.protocols:
            return JoinGroupResponse(
                Errors.INCONSISTENT_GROUP_PROTOCOL, error_message="the member offers no assignor"
            )
        group = self.groups.get(request.group_id)
        if request.member_id != NO_MEMBER and (
            group is None or not group.has_member(request.member_id)
        ):
            return JoinGroupResponse(
                Errors.UNKNOWN_MEMBER_ID,
                error_message=(
                    f"member {request.member_id} is not in group {request.group_id}; "
                    "rejoin without a member id"
                ),
            )
        if group is None:
            group = self.groups[request.group_id] = GroupMetadata(
                request.group_id, request.protocol_type
            )
        if group.state is GroupState.DEAD:
            return JoinGroupResponse(
                Errors.COORDINATOR_NOT_AVAILABLE,
                error_message=f"group {group.group_id} is being unloaded",
            )
        if (
            group.protocol_type != request.protocol_type and not group.is_empty()
        ) or not group.supports_protocols(name for name, _ in request.protocols):
            return JoinGroupResponse(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                error_message=(
                    f"group {group.group_id} uses protocol type {group.protocol_type!r} "
                    f"with assignors {sorted(group.candidate_protocols())}; "
                    f"the member offers {request.protocol_type!r} "
                    f"{[name for name, _ in request.protocols]}"
                ),
            )
        if request.member_id == NO_MEMBER:
            return await self._add_member(group, request)
        return await self._rejoin(group, group.get_member(request.member_id), request)

    async def _add_member(
        self, group: GroupMetadata, request: JoinGroupRequest
    ) -> JoinGroupResponse:
        if group.is_empty():
            group.protocol_type = request.protocol_type
        member = MemberMetadata(
            new_member_id(request.client_id),
            request.client_id,
            request.client_host,
            request.session_timeout_ms,
            request.rebalance_timeout_ms,
            request.protocols,
            last_heartbeat_ms=self.clock(),
        )
        group.add_member(member)
        future = self._park_join(group, member)
        self._prepare_rebalance(group, new_member=True)
        self._maybe_complete_join(group)
        return await future

    async def _rejoin(
        self, group: GroupMetadata, member: MemberMetadata, request: JoinGroupRequest
    ) -> JoinGroupResponse:
        member.last_heartbeat_ms = self.clock()
        unchanged = member.matches(request.protocols)
        if group.state is GroupState.STABLE and unchanged and member.member_id != group.leader_id:
            return self._join_response(group, member.member_id)
        if group.state is GroupState.COMPLETING_REBALANCE and unchanged:
            return self._join_response(group, member.member_id)
        member.protocols = request.protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        future = self._park_join(group, member)
        if group.state is not GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(group)
        self._maybe_complete_join(group)
        return await future

    def _park_join(
        self, group: GroupMetadata, member: MemberMetadata
    ) -> asyncio.Future[JoinGroupResponse]:
        key = (group.group_id, member.member_id)
        previous = self._joins.pop(key, None)
        if previous is not None and not previous.done():
            previous.set_result(
                JoinGroupResponse(
                    Errors.REBALANCE_IN_PROGRESS, error_message="superseded by a newer JoinGroup"
                )
            )
        future: asyncio.Future[JoinGroupResponse] = asyncio.get_running_loop().create_future()
        self._joins[key] = future
        member.awaiting_join = True
        return future

    def _prepare_rebalance(self, group: GroupMetadata, new_member: bool = False) -> None:
        """Enter PreparingRebalance, or extend the initial delay when a new member arrives in it."""
        now = self.clock()
        if group.state is GroupState.PREPARING_REBALANCE:
            _, initial = self._join_deadlines[group.group_id]
            if initial and new_member:
                started = self._rebalance_started[group.group_id]
                cap = started + max(
                    group.rebalance_timeout_ms(), self.config.group_initial_rebalance_delay_ms
                )
                self._join_deadlines[group.group_id] = (
                    min(now + self.config.group_initial_rebalance_delay_ms, cap),
                    True,
                )
            return
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._fail_syncs(group, Errors.REBALANCE_IN_PROGRESS)
        initial = (
            group.state is GroupState.EMPTY and self.config.group_initial_rebalance_delay_ms > 0
        )
        group.transition_to(GroupState.PREPARING_REBALANCE)
        self._rebalance_started[group.group_id] = now
        delay = (
            self.config.group_initial_rebalance_delay_ms
            if initial
            else group.rebalance_timeout_ms()
        )
        self._join_deadlines[group.group_id] = (now + delay, initial)

    def _maybe_complete_join(self, group: GroupMetadata, deadline_passed: bool = False) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        _, initial = self._join_deadlines.get(group.group_id, (0, False))
        if not deadline_passed and (initial or not group.all_members_joined()):
            return
        for member in group.not_yet_rejoined_members():
            self._remove(group, member.member_id)
        self._join_deadlines.pop(group.group_id, None)
        group.init_next_generation()
        self.rebalances += 1
        if group.is_empty():
            # Keep a reference: the loop holds tasks weakly; unreferenced, one may vanish mid-write.
            task = asyncio.get_running_loop().create_task(self.persist(group))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return
        now = self.clock()
        for member_id, member in group.members.items():
            member.last_heartbeat_ms = now  # each session restarts with the generation, as in Kafka
            future = self._joins.pop((group.group_id, member_id), None)
            if future is not None and not future.done():
                future.set_result(self._join_response(group, member_id))

    def _join_response(self, group: GroupMetadata, member_id: str) -> JoinGroupResponse:
        members = (
            tuple(group.current_member_metadata().items()) if member_id == group.leader_id else ()
        )
        return JoinGroupResponse(
            Errors.NONE,
            group.generation_id,
            group.protocol_name or "",
            group.leader_id or "",
            member_id,
            members,
        )

    # ------------------------------------------------------------------ SyncGroup

    async def sync(self, request: SyncGroupRequest) -> SyncGroupResponse:
        """Hand out the leader's assignment; followers wait for it, the leader persists it first."""
        group = self.groups.get(request.group_id)
        error = self._member_error(group, request.member_id, request.generation_id)
        if error is not None:
            return SyncGroupResponse(error[0], error_message=error[1])
        assert group is not None
        member = group.get_member(request.member_id)
        member.last_heartbeat_ms = self.clock()
        if group.state is GroupState.PREPARING_REBALANCE:
            return SyncGroupResponse(
                Errors.REBALANCE_IN_PROGRESS, error_message=f"group {group.group_id} is rebalancing"
            )
        if group.state is GroupState.STABLE:
            return SyncGroupResponse(Errors.NONE, member.assignment)
        key = (group.group_id, member.member_id)
        previous = self._syncs.pop(key, None)
        if previous is not None and not previous.done():
            previous.set_result(
                SyncGroupResponse(
                    Errors.REBALANCE_IN_PROGRESS, error_message="superseded by a newer SyncGroup"
                )
            )
        future: asyncio.Future[SyncGroupResponse] = asyncio.get_running_loop().create_future()
        self._syncs[key] = future
        member.awaiting_sync = True
        if member.member_id == group.leader_id:
            await self._complete_sync(group, dict(request.assignments))
        return await future

    async def _complete_sync(self, group: GroupMetadata, assignments: dict[str, bytes]) -> None:
        generation = group.generation_id
        for member_id, member in group.members.items():
            member.assignment = assignments.get(member_id, b"")
        error = await self.persist(group)
        if group.state is not GroupState.COMPLETING_REBALANCE or group.generation_id != generation:
            return  # a rebalance began while the assignment was being written; its members rejoin
        if error is not Errors.NONE:
            self._fail_syncs(group, error)
            self._prepare_rebalance(group)
            return
        group.transition_to(GroupState.STABLE)
        now = self.clock()
        for member_id, member in group.members.items():
            member.awaiting_sync = False
            member.last_heartbeat_ms = now
            future = self._syncs.pop((group.group_id, member_id), None)
            if future is not None and not future.done():
                future.set_result(SyncGroupResponse(Errors.NONE, member.assignment))

    def _fail_syncs(self, group: GroupMetadata, error: Errors) -> None:
        for member_id, member in group.members.items():
            member.awaiting_sync = False
            member.assignment = b""
            future = self._syncs.pop((group.group_id, member_id), None)
            if future is not None and not future.done():
                future.set_result(
                    SyncGroupResponse(
                        error, error_message=f"group {group.group_id}: {error.message}"
                    )
                )

    # ------------------------------------------------------------ Heartbeat, LeaveGroup, expiry

    def heartbeat(self, request: HeartbeatRequest) -> GroupResponse:
        """Keep a member's session alive; tell it to rejoin while the group rebalances."""
        group = self.groups.get(request.group_id)
        error = self._member_error(group, request.member_id, request.generation_id)
        if error is not None:
            return GroupResponse(*error)
        assert group is not None
        group.get_member(request.member_id).last_heartbeat_ms = self.clock()
        if group.state is not GroupState.STABLE:
            return GroupResponse(
                Errors.REBALANCE_IN_PROGRESS, f"group {group.group_id} is rebalancing; rejoin"
            )
        return GroupResponse(Errors.NONE)

    def leave(self, request: LeaveGroupRequest) -> GroupResponse:
        """Remove a member at once and rebalance the rest."""
        group = self.groups.get(request.group_id)
        if (
            group is None
            or group.state is GroupState.DEAD
            or not group.has_member(request.member_id)
        ):
            return GroupResponse(
                Errors.UNKNOWN_MEMBER_ID,
                f"member {request.member_id} is not in group {request.group_id}",
            )
        self._remove_and_rebalance(group, request.member_id)
        return GroupResponse(Errors.NONE)

    def tick(self) -> None:
        """Expire members whose sessions lapsed and complete joins whose deadline passed."""
        now = self.clock()
        for group in list(self.groups.values()):
            if group.state is GroupState.DEAD:
                continue
            for member in list(group.members.values()):
                # Parked members are waiting on the coordinator, not silent: the join deadline
                # bounds them, and a parked sync ends when the leader's assignment arrives or the
                # group rebalances.
                parked = member.awaiting_join or member.awaiting_sync
                if not parked and now - member.last_heartbeat_ms > member.session_timeout_ms:
                    self._remove_and_rebalance(group, member.member_id)
            deadline = self._join_deadlines.get(group.group_id)
            if (
                group.state is GroupState.PREPARING_REBALANCE
                and deadline is not None
                and now >= deadline[0]
            ):
                self._maybe_complete_join(group, deadline_passed=True)

    def _remove_and_rebalance(self, group: GroupMetadata, member_id: str) -> None:
        self._remove(group, member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        self._maybe_complete_join(group)

    def _remove(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_member(member_id)
        self._answer_parked(
            group.group_id,
            {member_id},
            Errors.UNKNOWN_MEMBER_ID,
            f"member {member_id} was removed from group {group.group_id}",
        )

    def _answer_parked(
        self, group_id: str, member_ids: set[str] | None, error: Errors, message: str
    ) -> None:
        """Answer the parked joins and syncs of ``member_ids`` (None: all) with ``error``."""

        def chosen(key: ParkKey) -> bool:
            return key[0] == group_id and (member_ids is None or key[1] in member_ids)

        _answer(self._joins, chosen, JoinGroupResponse(error, error_message=message))
        _answer(self._syncs, chosen, SyncGroupResponse(error, error_message=message))

    # ------------------------------------------------------------------ commits, loading, unloading

    def commit_error(
        self, group_id: str, generation_id: int, member_id: str
    ) -> tuple[Errors, str] | None:
        """Why an offset commit must be refused, or None: the generation fences stale members."""
        group = self.groups.get(group_id)
        if generation_id == NO_GENERATION and member_id == NO_MEMBER:
            if group is None or group.is_empty():
                return None
            return Errors.UNKNOWN_MEMBER_ID, (
                f"group {group_id} has {len(group.members)} active members; offsets can only be "
                "changed from outside the group while it is inactive"
            )
        if group is None:
            return Errors.ILLEGAL_GENERATION, f"group {group_id} has no generation {generation_id}"
        error = self._member_error(group, member_id, generation_id)
        if error is not None:
            return error
        if group.state is GroupState.COMPLETING_REBALANCE:
            return (
                Errors.REBALANCE_IN_PROGRESS,
                f"group {group_id} is rebalancing; commit after rejoining",
            )
        return None

    def txn_commit_error(
        self, group_id: str, generation_id: int, member_id: str
    ) -> tuple[Errors, str] | None:
        """Why a transactional offset commit must be refused, or None (Kafka's rules, KIP-447).

        A producer that sends no group metadata (no generation, no member) commits for any group;
        one that names its member and generation is fenced as a member's plain commit is, except
        that a rebalance in progress does not refuse it: the transaction aborts if the member is
        gone by the time it commits.
        """
        group = self.groups.get(group_id)
        if group is None:
            if member_id != NO_MEMBER:
                return Errors.UNKNOWN_MEMBER_ID, f"group {group_id} has no member {member_id!r}"
            if generation_id >= 0:
                return (
                    Errors.ILLEGAL_GENERATION,
                    f"group {group_id} has no generation {generation_id}",
                )
            return None
        if group.state is GroupState.DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE, f"group {group_id} is being removed"
        if generation_id < 0 and group.is_empty():
            return None
        if member_id != NO_MEMBER and not group.has_member(member_id):
            return Errors.UNKNOWN_MEMBER_ID, (
                f"member {member_id!r} is not in {group_id}; rejoin without a member id"
            )
        if generation_id >= 0 and generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION, (
                f"generation {generation_id} of group {group_id} is stale; "
                f"the current one is {group.generation_id}"
            )
        return None

    def restore(self, group_id: str, value: GroupValue) -> None:
        """Recreate a group loaded from the offsets log: Stable with its members, or Empty.

        Restored members get a fresh session, as in Kafka, so live ones keep their assignment if
        they heartbeat the new coordinator in time.
        """
        group = GroupMetadata(group_id, value.protocol_type)
        now = self.clock()
        for stored in value.members:
            group.add_member(
                MemberMetadata(
                    stored.member_id,
                    stored.client_id,
                    stored.client_host,
                    stored.session_timeout_ms,
                    stored.rebalance_timeout_ms,
                    ((value.protocol or "", stored.subscription),),
                    assignment=stored.assignment,
                    last_heartbeat_ms=now,
                )
            )
        group.generation_id = value.generation_id
        group.protocol_name = value.protocol
        if value.leader_id in group.members:
            group.leader_id = value.leader_id
        if group.members:
            for state in (
                GroupState.PREPARING_REBALANCE,
                GroupState.COMPLETING_REBALANCE,
                GroupState.STABLE,
            ):
                group.transition_to(state)
        self.groups[group_id] = group

    def unload(self, group_id: str) -> None:
        """The group's offsets partition moved away: answer its parked requests NOT_COORDINATOR and
        forget it."""
        group = self.groups.pop(group_id, None)
        if group is None:
            return
        group.transition_to(GroupState.DEAD)
        self._answer_parked(
            group_id, None, Errors.NOT_COORDINATOR, f"group {group_id} moved to another coordinator"
        )
        self._join_deadlines.pop(group_id, None)
        self._rebalance_started.pop(group_id, None)

    def _member_error(
        self, group: GroupMetadata | None, member_id: str, generation_id: int
    ) -> tuple[Errors, str] | None:
        if group is None or group.state is GroupState.DEAD or not group.has_member(member_id):
            name = group.group_id if group is not None else "this group"
            return (
                Errors.UNKNOWN_MEMBER_ID,
                f"member {member_id!r} is not in {name}; rejoin without a member id",
            )
        if generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION, (
                f"generation {generation_id} of group {group.group_id} is stale; "
                f"the current one is {group.generation_id}"
            )
        return None


def _answer(
    waiting: dict[ParkKey, asyncio.Future[R]], chosen: Callable[[ParkKey], bool], response: R
) -> None:
    """Take the parked requests ``chosen`` picks out of ``waiting``; answer those still pending."""
    for key in [k for k in waiting if chosen(k)]:
        future = waiting.pop(key)
        if not future.done():
            future.set_result(response)


def stored_members(group: GroupMetadata) -> tuple[StoredMember, ...]:
    """The members of ``group`` as persisted in its group record."""
    protocol = group.protocol_name or ""
    return tuple(
        StoredMember(
            m.member_id,
            m.client_id,
            m.client_host,
            m.session_timeout_ms,
            m.rebalance_timeout_ms,
            m.metadata_for(protocol) if protocol in m.protocol_names else b"",
            m.assignment,
        )
        for m in group.members.values()
    )
