"""A group member's side of the rebalance protocol as a state machine, and what each coordinator
error means to it.

The consumer drives the machine from ``poll`` with a deadline (KIP-266): a JoinGroup or SyncGroup is
a request in flight across polls, so ``poll`` returns when its time is up and the next one goes on
where it stood. An error from the coordinator decides the next step: REBALANCE_IN_PROGRESS means
rejoin (revoking the partitions as usual), UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION mean the
coordinator removed this member, whose partitions are lost at once (Kafka's ``onPartitionsLost``),
and the coordinator errors mean look the coordinator up again.
"""

from __future__ import annotations

import enum

from rafka.protocol.errors import Errors


class MemberState(enum.Enum):
    """Where a member stands in joining its group."""

    UNJOINED = "unjoined"
    """Not in a generation: the next poll sends JoinGroup."""
    JOINING = "joining"
    """JoinGroup in flight: the coordinator answers when every member rejoined."""
    SYNCING = "syncing"
    """SyncGroup in flight: the answer carries this member's assignment."""
    STABLE = "stable"
    """In a generation with an assignment; heartbeats keep the session alive."""
    CLOSED = "closed"
    """Left the group for good."""


TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    MemberState.UNJOINED: frozenset({MemberState.JOINING, MemberState.CLOSED}),
    MemberState.JOINING: frozenset({MemberState.SYNCING, MemberState.UNJOINED, MemberState.CLOSED}),
    MemberState.SYNCING: frozenset({MemberState.STABLE, MemberState.UNJOINED, MemberState.CLOSED}),
    MemberState.STABLE: frozenset({MemberState.UNJOINED, MemberState.CLOSED}),
    MemberState.CLOSED: frozenset(),
}
"""The valid moves: every change of state is checked against this table."""


class IllegalMemberStateError(RuntimeError):
    """A move the protocol does not allow (a bug in the client)."""


class MemberStateMachine:
    """The current state of one member, changed only along ``TRANSITIONS``."""

    def __init__(self) -> None:
        self.state = MemberState.UNJOINED

    def transition_to(self, target: MemberState) -> None:
        """Move to ``target``; IllegalMemberStateError if the table does not allow it."""
        if target not in TRANSITIONS[self.state]:
            raise IllegalMemberStateError(f"a group member cannot go from {self.state} to {target}")
        self.state = target

    def can_move_to(self, target: MemberState) -> bool:
        """Whether ``target`` is a valid next state."""
        return target in TRANSITIONS[self.state]


class Reaction(enum.Enum):
    """What a member does about a coordinator's answer."""

    PROCEED = "proceed"
    """No error."""
    REJOIN = "rejoin"
    """The group is rebalancing: give the partitions up in order and join again."""
    LOST = "lost"
    """The coordinator removed this member (or fenced its generation): its partitions are lost."""
    FIND_COORDINATOR = "find_coordinator"
    """The coordinator moved or is loading: look it up again and retry."""
    FAIL = "fail"
    """Anything else: raise it to the application."""


REACTIONS: dict[Errors, Reaction] = {
    Errors.NONE: Reaction.PROCEED,
    Errors.REBALANCE_IN_PROGRESS: Reaction.REJOIN,
    Errors.ILLEGAL_GENERATION: Reaction.LOST,
    Errors.UNKNOWN_MEMBER_ID: Reaction.LOST,
    Errors.NOT_COORDINATOR: Reaction.FIND_COORDINATOR,
    Errors.COORDINATOR_NOT_AVAILABLE: Reaction.FIND_COORDINATOR,
    Errors.COORDINATOR_LOAD_IN_PROGRESS: Reaction.FIND_COORDINATOR,
}


def reaction_to(error: Errors) -> Reaction:
    """How a member reacts to ``error`` in a coordinator's answer."""
    return REACTIONS.get(error, Reaction.FAIL)


def forgets_member_id(error: Errors) -> bool:
    """Whether the member must rejoin as a new member (the coordinator no longer knows its id)."""
    return error is Errors.UNKNOWN_MEMBER_ID
