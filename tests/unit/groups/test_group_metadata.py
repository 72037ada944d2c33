"""Tests for rafka.groups.group_metadata: Kafka 2.x group states, membership, generations."""

from __future__ import annotations

import itertools

import pytest

from rafka.groups.group_metadata import (
    GROUP_VALID_PREVIOUS,
    GroupMetadata,
    GroupState,
    IllegalStateError,
    MemberMetadata,
    new_member_id,
    validate_group_id,
)
from rafka.protocol.errors import Errors, UnknownMemberIdError

G = GroupState
# Built from the Errors table at import time, so named here rather than imported.
InconsistentGroupProtocolError = Errors.INCONSISTENT_GROUP_PROTOCOL.exception_class
InvalidGroupIdError = Errors.INVALID_GROUP_ID.exception_class

# Written out by hand from Kafka 2.x's GroupMetadata.scala, as (from, to), so
# the table is checked against an independent copy rather than against itself.
VALID_TRANSITIONS: set[tuple[GroupState, GroupState]] = {
    (G.PREPARING_REBALANCE, G.EMPTY),
    (G.STABLE, G.PREPARING_REBALANCE),
    (G.COMPLETING_REBALANCE, G.PREPARING_REBALANCE),
    (G.EMPTY, G.PREPARING_REBALANCE),
    (G.PREPARING_REBALANCE, G.COMPLETING_REBALANCE),
    (G.COMPLETING_REBALANCE, G.STABLE),
    (G.STABLE, G.DEAD),
    (G.PREPARING_REBALANCE, G.DEAD),
    (G.COMPLETING_REBALANCE, G.DEAD),
    (G.EMPTY, G.DEAD),
    (G.DEAD, G.DEAD),
}

# A valid path from a new (Empty) group to each state.
PATH_TO = {
    G.EMPTY: [],
    G.PREPARING_REBALANCE: [G.PREPARING_REBALANCE],
    G.COMPLETING_REBALANCE: [G.PREPARING_REBALANCE, G.COMPLETING_REBALANCE],
    G.STABLE: [G.PREPARING_REBALANCE, G.COMPLETING_REBALANCE, G.STABLE],
    G.DEAD: [G.DEAD],
}


def group_in(state: GroupState, group_id: str = "g") -> GroupMetadata:
    group = GroupMetadata(group_id)
    for step in PATH_TO[state]:
        group.transition_to(step)
    assert group.state is state
    return group


def member(
    member_id: str,
    protocols: tuple[str, ...] = ("range",),
    rebalance_timeout_ms: int = 30_000,
    awaiting_join: bool = False,
) -> MemberMetadata:
    return MemberMetadata(
        member_id=member_id,
        client_id="client",
        client_host="/127.0.0.1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=rebalance_timeout_ms,
        protocols=tuple((name, f"{member_id}:{name}".encode()) for name in protocols),
        awaiting_join=awaiting_join,
    )


def transition_id(pair: tuple[GroupState, GroupState]) -> str:
    return f"{pair[0].value}->{pair[1].value}"


# The transition table


def test_table_matches_kafka() -> None:
    table = {(prev, target) for target, prevs in GROUP_VALID_PREVIOUS.items() for prev in prevs}
    assert table == VALID_TRANSITIONS
    assert set(GROUP_VALID_PREVIOUS) == set(GroupState)


def test_state_values_are_kafkas_names() -> None:
    assert [s.value for s in GroupState] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


SORTED_VALID_TRANSITIONS = sorted(VALID_TRANSITIONS, key=transition_id)


@pytest.mark.parametrize("pair", SORTED_VALID_TRANSITIONS, ids=transition_id)
def test_valid_transition(pair: tuple[GroupState, GroupState]) -> None:
    source, target = pair
    group = group_in(source)
    group.transition_to(target)
    assert group.state is target


INVALID_TRANSITIONS = sorted(
    set(itertools.product(GroupState, GroupState)) - VALID_TRANSITIONS, key=transition_id
)


@pytest.mark.parametrize("pair", INVALID_TRANSITIONS, ids=transition_id)
def test_invalid_transition_raises_and_keeps_the_state(pair: tuple[GroupState, GroupState]) -> None:
    source, target = pair
    group = group_in(source, group_id="orders")
    with pytest.raises(IllegalStateError) as info:
        group.transition_to(target)
    assert group.state is source
    message = str(info.value)
    assert "orders" in message and source.value in message and target.value in message


def test_invalid_transitions_are_the_fourteen_kafka_forbids() -> None:
    assert len(INVALID_TRANSITIONS) == 25 - 11
    assert (G.EMPTY, G.STABLE) in INVALID_TRANSITIONS
    assert (G.DEAD, G.EMPTY) in INVALID_TRANSITIONS
    assert (G.STABLE, G.COMPLETING_REBALANCE) in INVALID_TRANSITIONS


@pytest.mark.parametrize("state", list(GroupState), ids=lambda s: s.value)
def test_can_rebalance_only_from_stable_completing_or_empty(state: GroupState) -> None:
    expected = state in {G.STABLE, G.COMPLETING_REBALANCE, G.EMPTY}
    assert group_in(state).can_rebalance() is expected


def test_new_group_is_empty_generation_zero_consumer() -> None:
    group = GroupMetadata("g")
    assert group.state is G.EMPTY
    assert group.generation_id == 0
    assert group.protocol_type == "consumer"
    assert group.protocol_name is None and group.leader_id is None
    assert group.is_empty()


# Membership and the leader


def test_first_member_becomes_leader() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a"))
    group.add_member(member("b"))
    assert group.leader_id == "a"
    assert group.has_member("b") and not group.is_empty()
    assert group.get_member("b").member_id == "b"


def test_leader_leaving_passes_leadership_to_the_longest_standing_member() -> None:
    group = GroupMetadata("g")
    for member_id in ("a", "b", "c"):
        group.add_member(member(member_id))
    removed = group.remove_member("a")
    assert removed.member_id == "a"
    assert group.leader_id == "b"


def test_leader_leaving_mid_rebalance_prefers_a_member_that_rejoined() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a", awaiting_join=True))
    group.add_member(member("b"))
    group.add_member(member("c", awaiting_join=True))
    group.remove_member("a")
    assert group.leader_id == "c"


def test_last_member_leaving_leaves_no_leader() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a"))
    group.remove_member("a")
    assert group.leader_id is None and group.is_empty()


def test_follower_leaving_keeps_the_leader() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a"))
    group.add_member(member("b"))
    group.remove_member("b")
    assert group.leader_id == "a"


def test_unknown_member_is_error_25() -> None:
    group = GroupMetadata("g")
    with pytest.raises(UnknownMemberIdError, match="ghost") as info:
        group.remove_member("ghost")
    assert info.value.error is Errors.UNKNOWN_MEMBER_ID
    with pytest.raises(UnknownMemberIdError):
        group.get_member("ghost")


def test_duplicate_member_is_rejected() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a"))
    with pytest.raises(IllegalStateError, match="already"):
        group.add_member(member("a"))


def test_member_sharing_no_assignor_with_the_group_is_rejected() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a", ("range", "sticky")))
    group.add_member(member("b", ("sticky", "range")))
    assert group.candidate_protocols() == {"range", "sticky"}
    assert group.supports_protocols(["sticky"])
    assert not group.supports_protocols(["roundrobin"])
    with pytest.raises(InconsistentGroupProtocolError, match="roundrobin"):
        group.add_member(member("c", ("roundrobin",)))
    assert not group.has_member("c")


def test_empty_group_accepts_any_protocols() -> None:
    group = GroupMetadata("g")
    assert group.candidate_protocols() == frozenset()
    assert group.supports_protocols(["anything"])


def test_all_members_joined_tracks_parked_joins() -> None:
    group = GroupMetadata("g")
    assert group.all_members_joined()  # vacuously, so an abandoned rebalance can complete
    group.add_member(member("a", awaiting_join=True))
    group.add_member(member("b"))
    assert not group.all_members_joined()
    assert [m.member_id for m in group.not_yet_rejoined_members()] == ["b"]
    group.get_member("b").awaiting_join = True
    assert group.all_members_joined()


def test_rebalance_timeout_is_the_largest_members() -> None:
    group = GroupMetadata("g")
    assert group.rebalance_timeout_ms() == 0
    group.add_member(member("a", rebalance_timeout_ms=5_000))
    group.add_member(member("b", rebalance_timeout_ms=60_000))
    assert group.rebalance_timeout_ms() == 60_000


# Generations and protocol selection


def test_init_next_generation_bumps_generation_and_picks_a_common_protocol() -> None:
    group = group_in(G.PREPARING_REBALANCE)
    group.add_member(member("a", ("cooperative-sticky", "sticky", "range"), awaiting_join=True))
    group.add_member(member("b", ("range", "sticky"), awaiting_join=True))
    group.init_next_generation()
    assert group.generation_id == 1
    assert group.state is G.COMPLETING_REBALANCE
    # Leader a's order decides among what both support.
    assert group.protocol_name == "sticky"
    assert all(group.protocol_name in m.protocol_names for m in group.members.values())
    assert not any(m.awaiting_join for m in group.members.values())


def test_select_protocol_uses_the_new_leaders_order_after_the_leader_leaves() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a", ("range", "sticky")))
    group.add_member(member("b", ("sticky", "range")))
    assert group.select_protocol() == "range"
    group.remove_member("a")
    assert group.select_protocol() == "sticky"


def test_select_protocol_on_an_empty_group_raises() -> None:
    with pytest.raises(IllegalStateError, match="empty"):
        GroupMetadata("g").select_protocol()


def test_init_next_generation_with_no_members_goes_empty() -> None:
    group = group_in(G.PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.state is G.EMPTY
    assert group.generation_id == 1
    assert group.protocol_name is None


def test_init_next_generation_waits_for_every_member() -> None:
    group = group_in(G.PREPARING_REBALANCE)
    group.add_member(member("a", awaiting_join=True))
    group.add_member(member("late"))
    with pytest.raises(IllegalStateError, match="late"):
        group.init_next_generation()
    assert group.generation_id == 0 and group.state is G.PREPARING_REBALANCE


def test_init_next_generation_outside_preparing_rebalance_changes_nothing() -> None:
    group = GroupMetadata("g")  # Empty: CompletingRebalance may not follow
    group.add_member(member("a", awaiting_join=True))
    with pytest.raises(IllegalStateError):
        group.init_next_generation()
    assert group.generation_id == 0 and group.protocol_name is None


def test_generation_grows_by_one_per_rebalance() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a"))
    group.add_member(member("b"))
    for expected in (1, 2, 3):
        group.transition_to(G.PREPARING_REBALANCE)
        for m in group.members.values():
            m.awaiting_join = True
        group.init_next_generation()
        group.transition_to(G.STABLE)
        assert group.generation_id == expected
    # Everyone leaves: the next join completes into Empty, still counting.
    group.transition_to(G.PREPARING_REBALANCE)
    group.remove_member("a")
    group.remove_member("b")
    group.init_next_generation()
    assert (group.state, group.generation_id) == (G.EMPTY, 4)


def test_current_member_metadata_gives_each_members_chosen_subscription() -> None:
    group = group_in(G.PREPARING_REBALANCE)
    group.add_member(member("a", ("sticky", "range"), awaiting_join=True))
    group.add_member(member("b", ("range",), awaiting_join=True))
    group.init_next_generation()
    assert group.current_member_metadata() == {"a": b"a:range", "b": b"b:range"}


@pytest.mark.parametrize("state", [G.PREPARING_REBALANCE, G.DEAD], ids=lambda s: s.value)
def test_current_member_metadata_is_unavailable_while_unsettled(state: GroupState) -> None:
    group = group_in(state)
    with pytest.raises(IllegalStateError, match=state.value):
        group.current_member_metadata()


def test_repr_shows_state_generation_and_members() -> None:
    group = GroupMetadata("g")
    group.add_member(member("a"))
    assert repr(group) == (
        "GroupMetadata('g', state=Empty, generation=0, protocol=None, leader='a', members=['a'])"
    )


# MemberMetadata


def test_member_protocols_lookup() -> None:
    m = member("a", ("sticky", "range"))
    assert m.protocol_names == ("sticky", "range")
    assert m.metadata_for("range") == b"a:range"
    with pytest.raises(ValueError, match="roundrobin"):
        m.metadata_for("roundrobin")


def test_member_supports_any_of_the_given_protocols() -> None:
    m = member("a", ("sticky", "range"))
    assert m.supports({"range", "roundrobin"})
    assert not m.supports({"roundrobin"})
    assert not m.supports(set())


def test_member_matches_only_identical_protocols() -> None:
    m = member("a", ("sticky", "range"))
    assert m.matches(m.protocols)
    assert not m.matches(tuple(reversed(m.protocols)))
    assert not m.matches((("sticky", b"changed"), ("range", b"a:range")))


def test_member_defaults_have_no_assignment_and_nothing_parked() -> None:
    m = member("a")
    assert m.assignment == b""
    assert (m.last_heartbeat_ms, m.last_poll_ms) == (0, 0)
    assert not m.awaiting_join and not m.awaiting_sync


# Group ids and member ids


@pytest.mark.parametrize("group_id", [None, ""])
def test_missing_group_id_is_error_24(group_id: str | None) -> None:
    with pytest.raises(InvalidGroupIdError, match="non-empty") as info:
        validate_group_id(group_id)
    assert info.value.error is Errors.INVALID_GROUP_ID
    assert int(info.value.error) == 24


@pytest.mark.parametrize("group_id", ["g", "orders-consumers", " "])
def test_non_empty_group_id_is_accepted(group_id: str) -> None:
    validate_group_id(group_id)


def test_new_member_id_is_client_id_plus_a_unique_suffix() -> None:
    first, second = new_member_id("consumer-1"), new_member_id("consumer-1")
    assert first.startswith("consumer-1-") and second.startswith("consumer-1-")
    assert first != second
    assert len(first) == len("consumer-1-") + 36  # a canonical UUID string
