"""A consumer group's state machine and membership, as data (Kafka's ``GroupMetadata``).

The group coordinator keeps one ``GroupMetadata`` per group it owns and one
``MemberMetadata`` per member. Everything here is plain state plus the rules
that keep it consistent -- which state may follow which, who leads, which
assignor the group uses -- so the coordinator's request handling can be tested
apart from Ray, timers and the offsets topic. Parked requests (the futures
answered when a join or sync completes) live in the coordinator; a member
record only says whether one is parked (``awaiting_join`` / ``awaiting_sync``).

The transition table is Kafka 2.x's (``AwaitingSync`` was renamed
``CompletingRebalance`` in 2.0). An invalid transition is a coordinator bug,
so ``transition_to`` raises, as Kafka's ``assertValidTransition`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from uuid import uuid4

from rafka.groups.assignors import choose_protocol
from rafka.protocol.errors import Errors, UnknownMemberIdError


class IllegalStateError(RuntimeError):
    """A group was asked for something its state forbids: a coordinator bug.

    The counterpart of Java's ``IllegalStateException`` in Kafka's ``GroupMetadata``;
    it has no Kafka error code because it never reaches a client.
    """


class GroupState(Enum):
    """Where a group is in the rebalance protocol, and what the coordinator does in each state.

    ====================  =======================================================
    State                 Actions / transitions (=> target)
    ====================  =======================================================
    EMPTY                 action: accept JoinGroup from new members; answer
                          SyncGroup, Heartbeat, LeaveGroup and OffsetCommit with
                          UNKNOWN_MEMBER_ID; serve OffsetFetch (a group with no
                          members may still hold committed offsets).
                          transition: a new member joins => PreparingRebalance;
                          its last offsets expire, the group is deleted, or its
                          offsets partition moves to another broker => Dead.
    PREPARING_REBALANCE   action: answer Heartbeat and SyncGroup with
                          REBALANCE_IN_PROGRESS; park JoinGroup from new and
                          existing members until all expected ones joined;
                          remove members on LeaveGroup; still accept commits
                          from the previous generation; serve OffsetFetch.
                          transition: the join completes (everyone joined, or
                          the rebalance timeout fired) with members left =>
                          CompletingRebalance; all members left => Empty;
                          offsets partition moves away => Dead.
    COMPLETING_REBALANCE  action: answer Heartbeat and OffsetCommit with
                          REBALANCE_IN_PROGRESS; park followers' SyncGroup until
                          the leader's assignment arrives; serve OffsetFetch.
                          transition: the leader's SyncGroup brings the
                          assignment => Stable; a new member joins, a member
                          rejoins with changed metadata, leaves, or its session
                          expires => PreparingRebalance; offsets partition moves
                          away => Dead.
    STABLE                action: answer Heartbeat normally; answer SyncGroup
                          with the member's current assignment; answer a
                          follower's JoinGroup with unchanged metadata with the
                          current generation; accept commits from the current
                          generation; serve OffsetFetch.
                          transition: a member's session expires, a member
                          leaves, the leader rejoins, or a follower rejoins with
                          new metadata => PreparingRebalance; offsets partition
                          moves away => Dead.
    DEAD                  action: answer JoinGroup, SyncGroup, Heartbeat,
                          LeaveGroup and OffsetCommit with UNKNOWN_MEMBER_ID;
                          serve OffsetFetch.
                          transition: none; the metadata is about to be dropped.
    ====================  =======================================================
    """

    # Values are Kafka's names, as DescribeGroups reports them.
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_G = GroupState

GROUP_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    _G.EMPTY: frozenset({_G.PREPARING_REBALANCE}),
    _G.PREPARING_REBALANCE: frozenset({_G.STABLE, _G.COMPLETING_REBALANCE, _G.EMPTY}),
    _G.COMPLETING_REBALANCE: frozenset({_G.PREPARING_REBALANCE}),
    _G.STABLE: frozenset({_G.COMPLETING_REBALANCE}),
    # Dead -> Dead lets removal paths that race (emigration, expiry) both finish.
    _G.DEAD: frozenset(
        {_G.STABLE, _G.PREPARING_REBALANCE, _G.COMPLETING_REBALANCE, _G.EMPTY, _G.DEAD}
    ),
}
"""Target state -> the states a group may move to it from."""


@dataclass
class MemberMetadata:
    """One member as the coordinator sees it: identity, timeouts, protocols, assignment, liveness.

    ``protocols`` lists (assignor name, serialized subscription) pairs in the
    member's preference order; the coordinator never decodes the bytes, it
    only hands those of the chosen assignor to the leader.
    ``last_poll_ms`` backs ``max.poll.interval.ms``: a member that heartbeats
    but stopped polling is stuck and must be removed like a dead one.
    """

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    last_heartbeat_ms: int = 0
    last_poll_ms: int = 0
    awaiting_join: bool = False
    awaiting_sync: bool = False

    @property
    def protocol_names(self) -> tuple[str, ...]:
        """The member's assignor names in preference order."""
        return tuple(name for name, _ in self.protocols)

    def supports(self, protocols: Iterable[str]) -> bool:
        """Whether the member offers any of ``protocols``, so a group using them can hold it.

        The group passes its candidate protocols (those every member offers).
        """
        return not set(self.protocol_names).isdisjoint(protocols)

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Whether a rejoin carries exactly the current protocols, so no rebalance is needed."""
        return self.protocols == protocols

    def metadata_for(self, protocol: str) -> bytes:
        """The serialized subscription sent for ``protocol``; ValueError if the member lacks it."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(
            f"member {self.member_id} does not support protocol {protocol!r}; "
            f"it offers {list(self.protocol_names)}"
        )


class GroupMetadata:
    """One group's state, generation, chosen assignor, leader and members.

    The generation id grows by one per completed join, and every member
    request carries it, so commits and syncs from a member that missed a
    rebalance are fenced with ILLEGAL_GENERATION, as in Kafka. Mutate
    ``members`` only through ``add_member`` / ``remove_member``, which keep
    the leader valid.
    """

    def __init__(self, group_id: str, protocol_type: str = "consumer") -> None:
        self.group_id = group_id
        self.protocol_type = protocol_type
        self.generation_id = 0
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self._state = GroupState.EMPTY

    @property
    def state(self) -> GroupState:
        """The current state; changed only by ``transition_to``, which checks the table."""
        return self._state

    def transition_to(self, target: GroupState) -> None:
        """Move to ``target``; IllegalStateError naming both states if the table forbids it."""
        allowed = GROUP_VALID_PREVIOUS[target]
        if self._state not in allowed:
            raise IllegalStateError(
                f"group {self.group_id} cannot move from {self._state.value} to {target.value}; "
                f"{target.value} may only follow {sorted(s.value for s in allowed)}"
            )
        self._state = target

    def can_rebalance(self) -> bool:
        """Whether a rebalance may start now: PreparingRebalance may follow the current state."""
        return self._state in GROUP_VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def is_empty(self) -> bool:
        """Whether the group has no members (it may still own committed offsets)."""
        return not self.members

    def has_member(self, member_id: str) -> bool:
        """Whether ``member_id`` belongs to the group."""
        return member_id in self.members

    def get_member(self, member_id: str) -> MemberMetadata:
        """The member's record; UnknownMemberIdError if the group does not know it."""
        try:
            return self.members[member_id]
        except KeyError:
            raise UnknownMemberIdError(
                f"member {member_id} is not in group {self.group_id}"
            ) from None

    def candidate_protocols(self) -> frozenset[str]:
        """The assignor names every current member offers (empty for an empty group)."""
        names = [frozenset(m.protocol_names) for m in self.members.values()]
        return frozenset.intersection(*names) if names else frozenset()

    def supports_protocols(self, protocols: Iterable[str]) -> bool:
        """Whether a member offering ``protocols`` could join: some assignor must stay common."""
        return self.is_empty() or not self.candidate_protocols().isdisjoint(protocols)

    def add_member(self, member: MemberMetadata) -> None:
        """Admit ``member``; the first member becomes leader.

        Raises:
            InconsistentGroupProtocolError: it shares no assignor with the group.
            IllegalStateError: a member with its id is already present.
        """
        if member.member_id in self.members:
            raise IllegalStateError(
                f"member {member.member_id} is already in group {self.group_id}"
            )
        if not self.supports_protocols(member.protocol_names):
            raise Errors.INCONSISTENT_GROUP_PROTOCOL.exception(
                f"member {member.member_id} offers {list(member.protocol_names)}, none of which "
                f"every member of group {self.group_id} supports "
                f"({sorted(self.candidate_protocols())})"
            )
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member

    def remove_member(self, member_id: str) -> MemberMetadata:
        """Drop a member and return its record, electing a new leader if it led.

        The new leader is the longest-standing member that has already
        rejoined, else the longest-standing one: during a rebalance the leader
        must be among the joined members, since it alone receives everyone's
        subscriptions in its JoinGroup response.
        """
        member = self.get_member(member_id)
        del self.members[member_id]
        if member_id == self.leader_id:
            joined = [m for m, meta in self.members.items() if meta.awaiting_join]
            self.leader_id = next(iter(joined or self.members), None)
        return member

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        """Members with no JoinGroup parked; a rebalance waits for them until its timeout."""
        return [m for m in self.members.values() if not m.awaiting_join]

    def all_members_joined(self) -> bool:
        """Whether every member has a JoinGroup parked, so the join can complete early."""
        return not self.not_yet_rejoined_members()

    def rebalance_timeout_ms(self) -> int:
        """How long a rebalance waits for members to rejoin: the largest member timeout."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def select_protocol(self) -> str:
        """The assignor for the next generation: ``choose_protocol`` in the leader's order.

        Raises:
            IllegalStateError: the group has no members.
        """
        if self.is_empty():
            raise IllegalStateError(f"cannot select a protocol for empty group {self.group_id}")
        ordered = sorted(self.members.values(), key=lambda m: m.member_id != self.leader_id)
        return choose_protocol([m.protocol_names for m in ordered])

    def init_next_generation(self) -> None:
        """Complete the join phase: bump the generation, pick the assignor, await the leader's sync.

        With members the group moves to CompletingRebalance; if everyone left
        it moves to Empty with no protocol. Every parked join is answered with
        the new generation right after this, so no member stays awaiting join.

        Raises:
            IllegalStateError: some member has not rejoined (the coordinator
                must remove it first), or the state forbids the transition.
        """
        if not self.all_members_joined():
            missing = sorted(m.member_id for m in self.not_yet_rejoined_members())
            raise IllegalStateError(
                f"group {self.group_id} cannot start a generation while {missing} have not rejoined"
            )
        target = GroupState.COMPLETING_REBALANCE if self.members else GroupState.EMPTY
        protocol = self.select_protocol() if self.members else None
        self.transition_to(target)
        self.generation_id += 1
        self.protocol_name = protocol
        for member in self.members.values():
            member.awaiting_join = False

    def current_member_metadata(self) -> dict[str, bytes]:
        """Member id -> subscription bytes for the chosen assignor: what the leader gets.

        Raises:
            IllegalStateError: in PreparingRebalance or Dead, where no assignor is settled.
        """
        unsettled = (GroupState.PREPARING_REBALANCE, GroupState.DEAD)
        if self._state in unsettled or self.protocol_name is None:
            raise IllegalStateError(
                f"group {self.group_id} has no settled protocol in state {self._state.value}"
            )
        return {m: meta.metadata_for(self.protocol_name) for m, meta in self.members.items()}

    def __repr__(self) -> str:
        return (
            f"GroupMetadata({self.group_id!r}, state={self._state.value}, "
            f"generation={self.generation_id}, protocol={self.protocol_name!r}, "
            f"leader={self.leader_id!r}, members={sorted(self.members)})"
        )


def validate_group_id(group_id: str | None) -> None:
    """Reject a missing or empty group id with InvalidGroupIdError (Kafka error 24).

    Offsets and coordinators are keyed by the id (the coordinator is found by
    hashing it), so a group without one cannot be placed.
    """
    if not isinstance(group_id, str) or not group_id:
        raise Errors.INVALID_GROUP_ID.exception(
            f"group id must be a non-empty string, got {group_id!r}"
        )


def new_member_id(client_id: str) -> str:
    """A fresh member id, ``<client_id>-<uuid4>`` as Kafka makes it: unique, yet traceable."""
    return f"{client_id}-{uuid4()}"
