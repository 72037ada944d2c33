"""The member state machine: its moves are the table's, and each coordinator error has one
reaction."""

from __future__ import annotations

import pytest

from rafka.clients.member_state import (
    TRANSITIONS,
    IllegalMemberStateError,
    MemberState,
    MemberStateMachine,
    Reaction,
    forgets_member_id,
    reaction_to,
)
from rafka.protocol.errors import Errors


def test_a_member_joins_syncs_and_becomes_stable_then_rejoins() -> None:
    machine = MemberStateMachine()
    for state in (
        MemberState.JOINING,
        MemberState.SYNCING,
        MemberState.STABLE,
        MemberState.UNJOINED,
    ):
        machine.transition_to(state)
    assert machine.state is MemberState.UNJOINED


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (MemberState.UNJOINED, MemberState.STABLE),
        (MemberState.UNJOINED, MemberState.SYNCING),
        (MemberState.STABLE, MemberState.SYNCING),
        (MemberState.CLOSED, MemberState.UNJOINED),
    ],
)
def test_a_move_outside_the_table_is_refused(start: MemberState, target: MemberState) -> None:
    machine = MemberStateMachine()
    machine.state = start
    assert not machine.can_move_to(target)
    with pytest.raises(IllegalMemberStateError):
        machine.transition_to(target)
    assert machine.state is start


def test_every_state_but_closed_can_close() -> None:
    assert all(
        MemberState.CLOSED in TRANSITIONS[s] for s in MemberState if s is not MemberState.CLOSED
    )
    assert TRANSITIONS[MemberState.CLOSED] == frozenset()


def test_removal_errors_mean_the_partitions_are_lost() -> None:
    assert reaction_to(Errors.UNKNOWN_MEMBER_ID) is Reaction.LOST
    assert reaction_to(Errors.ILLEGAL_GENERATION) is Reaction.LOST
    assert forgets_member_id(Errors.UNKNOWN_MEMBER_ID)
    assert not forgets_member_id(Errors.ILLEGAL_GENERATION)


def test_a_rebalance_means_rejoin_and_a_moving_coordinator_means_look_it_up() -> None:
    assert reaction_to(Errors.REBALANCE_IN_PROGRESS) is Reaction.REJOIN
    assert reaction_to(Errors.NOT_COORDINATOR) is Reaction.FIND_COORDINATOR
    assert reaction_to(Errors.COORDINATOR_LOAD_IN_PROGRESS) is Reaction.FIND_COORDINATOR
    assert reaction_to(Errors.NONE) is Reaction.PROCEED
    assert reaction_to(Errors.GROUP_AUTHORIZATION_FAILED) is Reaction.FAIL
