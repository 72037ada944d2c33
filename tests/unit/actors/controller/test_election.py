"""Tests for rafka.actors.controller.election: Kafka's partition leader election rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.actors.controller.election import (
    NO_LEADER,
    LeaderAndIsr,
    controlled_shutdown_leader,
    offline_leader,
    preferred_leader,
    reassignment_leader,
)

# The classic unclean-election scenarios' setting: RF 3, AR (0, 1, 2),
# ISR (0, 1), acks=-1, min.insync.replicas=2; broker 0 leads at first. Broker 2
# is kept alive but out of sync, so a clean election must never pick it.
AR = (0, 1, 2)
MIN_INSYNC = 2


def _serves_reads(decision: LeaderAndIsr) -> bool:
    return decision.leader != NO_LEADER


def _serves_acks_all_writes(decision: LeaderAndIsr) -> bool:
    return decision.leader != NO_LEADER and len(decision.isr) >= MIN_INSYNC


# offline_leader


def test_offline_leader_prefers_first_live_isr_member_in_assignment_order() -> None:
    # The ISR lists 2 first, but assignment order decides: 1 precedes 2.
    decision, unclean = offline_leader((0, 1, 2), isr=(2, 1, 0), live={1, 2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(1, (2, 1))
    assert not unclean


def test_offline_leader_drops_dead_members_from_isr_keeping_isr_order() -> None:
    decision, _ = offline_leader((3, 1, 2), isr=(2, 3, 1), live={1, 2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(1, (2, 1))


def test_offline_leader_skips_live_replicas_outside_isr_when_a_clean_choice_exists() -> None:
    decision, unclean = offline_leader((0, 1, 2), isr=(1,), live={0, 1, 2}, unclean_allowed=True)
    assert decision == LeaderAndIsr(1, (1,))
    assert not unclean


def test_unclean_election_picks_first_live_replica_and_flags_possible_loss() -> None:
    decision, unclean = offline_leader((0, 1, 2), isr=(0,), live={2, 1}, unclean_allowed=True)
    assert decision == LeaderAndIsr(1, (1,))
    assert unclean


def test_offline_leader_without_live_isr_and_unclean_disabled_keeps_isr_and_has_no_leader() -> None:
    decision, unclean = offline_leader((0, 1, 2), isr=(1, 0), live={2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(NO_LEADER, (1, 0))
    assert not unclean


def test_offline_leader_with_no_live_replica_has_no_leader_even_if_unclean_allowed() -> None:
    decision, unclean = offline_leader((0, 1, 2), isr=(0, 1), live=set(), unclean_allowed=True)
    assert decision == LeaderAndIsr(NO_LEADER, (0, 1))
    assert not unclean


def test_offline_leader_ignores_live_isr_member_missing_from_assignment() -> None:
    decision, _ = offline_leader((0, 1), isr=(5, 1), live={1, 5}, unclean_allowed=False)
    assert decision.leader == 1


# Three failure scenarios of Kafka's replication design (KIP-106 context)


def test_unclean_election_scenario1_leader_crash_moves_leadership_and_blocks_writes() -> None:
    decision, unclean = offline_leader(AR, isr=(0, 1), live={1, 2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(1, (1,))
    assert not unclean
    assert _serves_reads(decision)
    assert not _serves_acks_all_writes(decision)  # ISR 1 < min.insync 2: NotEnoughReplicas


def test_unclean_election_scenario2_both_crash_in_turn_leaves_partition_offline() -> None:
    after_first, _ = offline_leader(AR, isr=(0, 1), live={1, 2}, unclean_allowed=False)
    after_second, _ = offline_leader(AR, isr=after_first.isr, live={2}, unclean_allowed=False)
    assert after_second == LeaderAndIsr(NO_LEADER, (1,))
    assert not _serves_reads(after_second)


def test_scenario2_first_to_fail_returning_cannot_lead_while_unclean_disabled() -> None:
    # Replica 0 failed first; only replica 1, the last ISR member, may lead.
    decision, unclean = offline_leader(AR, isr=(1,), live={0, 2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(NO_LEADER, (1,))
    assert not unclean


def test_unclean_election_scenario2_unclean_enabled_restores_reads_with_possible_loss() -> None:
    decision, unclean = offline_leader(AR, isr=(1,), live={0, 2}, unclean_allowed=True)
    assert decision == LeaderAndIsr(0, (0,))
    assert unclean
    assert _serves_reads(decision)
    assert not _serves_acks_all_writes(decision)  # min.insync must be lowered to 1


def test_unclean_election_scenario2_last_to_fail_returning_leads_cleanly() -> None:
    decision, unclean = offline_leader(AR, isr=(1,), live={1, 2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(1, (1,))
    assert not unclean
    assert _serves_reads(decision)
    assert not _serves_acks_all_writes(decision)


def test_unclean_election_scenario3_simultaneous_crash_keeps_both_in_isr() -> None:
    decision, _ = offline_leader(AR, isr=(0, 1), live={2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(NO_LEADER, (0, 1))
    assert not _serves_reads(decision)


@pytest.mark.parametrize("returning", [0, 1])
def test_unclean_election_scenario3_either_returning_replica_leads_cleanly(returning: int) -> None:
    decision, unclean = offline_leader(AR, isr=(0, 1), live={returning, 2}, unclean_allowed=False)
    assert decision == LeaderAndIsr(returning, (returning,))
    assert not unclean
    assert _serves_reads(decision)
    assert not _serves_acks_all_writes(decision)  # writes wait for the second to rejoin


@given(
    assignment=st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True),
    isr_mask=st.lists(st.booleans(), min_size=6, max_size=6),
    live=st.sets(st.integers(0, 9)),
    unclean_allowed=st.booleans(),
)
def test_offline_leader_is_live_and_clean_leaders_come_from_isr(
    assignment: list[int], isr_mask: list[bool], live: set[int], unclean_allowed: bool
) -> None:
    isr = tuple(replica for replica, keep in zip(assignment, isr_mask, strict=False) if keep)
    decision, unclean = offline_leader(assignment, isr, live, unclean_allowed)
    if decision.leader == NO_LEADER:
        assert decision.isr == isr
        return
    assert decision.leader in live and decision.leader in assignment
    assert decision.leader in decision.isr
    assert unclean == (decision.leader not in isr)
    assert not unclean or unclean_allowed


# reassignment_leader


def test_reassignment_leader_is_first_target_replica_live_and_in_isr() -> None:
    decision = reassignment_leader((4, 5, 6), isr=(1, 2, 6, 5), live={1, 2, 5, 6})
    assert decision == LeaderAndIsr(5, (1, 2, 6, 5))


def test_reassignment_leader_skips_dead_target_replicas() -> None:
    assert reassignment_leader((4, 5), isr=(4, 5), live={5}) == LeaderAndIsr(5, (4, 5))


def test_reassignment_leader_is_none_when_no_target_replica_is_in_isr() -> None:
    assert reassignment_leader((4, 5, 6), isr=(1, 2, 3), live={1, 2, 3, 4, 5, 6}) is None


# preferred_leader


def test_preferred_leader_moves_leadership_to_first_assigned_replica() -> None:
    assert preferred_leader((2, 0, 1), isr=(0, 1, 2), live={0, 1, 2}) == LeaderAndIsr(2, (0, 1, 2))


@pytest.mark.parametrize(("isr", "live"), [((0, 1), {0, 1, 2}), ((0, 1, 2), {0, 1})])
def test_preferred_leader_is_none_unless_preferred_replica_is_live_and_in_isr(
    isr: tuple[int, ...], live: set[int]
) -> None:
    # Never falls back to another replica: that would not restore the balance.
    assert preferred_leader((2, 0, 1), isr=isr, live=live) is None


def test_preferred_leader_of_empty_assignment_is_none() -> None:
    assert preferred_leader((), isr=(), live={0}) is None


# controlled_shutdown_leader


def test_controlled_shutdown_removes_leaving_brokers_from_isr_and_picks_first_remaining() -> None:
    decision = controlled_shutdown_leader(
        (0, 1, 2), isr=(0, 1, 2), live={0, 1, 2}, shutting_down={0}
    )
    assert decision == LeaderAndIsr(1, (1, 2))


def test_controlled_shutdown_skips_dead_and_out_of_sync_replicas() -> None:
    decision = controlled_shutdown_leader(
        (0, 1, 2, 3), isr=(0, 2, 3), live={0, 1, 3}, shutting_down={0}
    )
    assert decision == LeaderAndIsr(3, (2, 3))


def test_controlled_shutdown_is_none_when_only_leaving_brokers_are_in_isr() -> None:
    assert (
        controlled_shutdown_leader((0, 1, 2), isr=(0, 1), live={0, 1, 2}, shutting_down={0, 1})
        is None
    )


def test_leader_and_isr_is_immutable() -> None:
    decision = LeaderAndIsr(1, (1, 2))
    with pytest.raises(AttributeError):
        decision.leader = 2  # type: ignore[misc]
