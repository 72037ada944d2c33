"""Tests for rafka.groups.assignors: range, round robin, (cooperative) sticky, protocol choice."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rafka.groups.assignors import (
    ASSIGNORS,
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    choose_protocol,
    get_assignor,
    revoked_partitions,
)
from rafka.protocol.errors import Errors
from rafka.protocol.types import TopicPartition

# Built from the Errors table at import time, so named here rather than imported.
InconsistentGroupProtocolError = Errors.INCONSISTENT_GROUP_PROTOCOL.exception_class


def subs(**topics: tuple[str, ...]) -> dict[str, Subscription]:
    """Member id -> Subscription to ``topics``, nothing owned."""
    return {member: Subscription(t) for member, t in topics.items()}


def tps(topic: str, *partitions: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


def counts(assignment: Assignment) -> dict[str, int]:
    return {member: len(partitions) for member, partitions in assignment.items()}


def claims_of(subscriptions: Mapping[str, Subscription]) -> dict[TopicPartition, set[str]]:
    claims: dict[TopicPartition, set[str]] = {}
    for member, sub in subscriptions.items():
        for tp in sub.owned_partitions:
            claims.setdefault(tp, set()).add(member)
    return claims


# Range (Kafka's RangeAssignor docs)


def test_range_ten_partitions_three_consumers_gives_4_3_3() -> None:
    result = RangeAssignor().assign(
        {"T1": 10}, subs(**{"C1-0": ("T1",), "C2-0": ("T1",), "C3-0": ("T1",)})
    )
    assert result == {
        "C1-0": tps("T1", 0, 1, 2, 3),
        "C2-0": tps("T1", 4, 5, 6),
        "C3-0": tps("T1", 7, 8, 9),
    }


def test_range_eleven_partitions_three_consumers_gives_4_4_3() -> None:
    result = RangeAssignor().assign(
        {"T1": 11}, subs(**{"C1-0": ("T1",), "C2-0": ("T1",), "C3-0": ("T1",)})
    )
    assert result == {
        "C1-0": tps("T1", 0, 1, 2, 3),
        "C2-0": tps("T1", 4, 5, 6, 7),
        "C3-0": tps("T1", 8, 9, 10),
    }


def test_range_two_topics_favours_first_member_on_every_topic() -> None:
    both = ("T1", "T2")
    result = RangeAssignor().assign(
        {"T1": 10, "T2": 10}, subs(**{"C1-0": both, "C2-0": both, "C3-0": both})
    )
    assert result["C1-0"] == tps("T1", 0, 1, 2, 3) + tps("T2", 0, 1, 2, 3)
    assert result["C2-0"] == tps("T1", 4, 5, 6) + tps("T2", 4, 5, 6)
    assert result["C3-0"] == tps("T1", 7, 8, 9) + tps("T2", 7, 8, 9)
    assert counts(result) == {"C1-0": 8, "C2-0": 6, "C3-0": 6}  # range's known bias


def test_range_splits_each_topic_among_its_own_subscribers() -> None:
    result = RangeAssignor().assign({"t1": 3, "t2": 4}, subs(a=("t1", "t2"), b=("t1",), c=("t2",)))
    assert result == {
        "a": tps("t1", 0, 1) + tps("t2", 0, 1),
        "b": tps("t1", 2),
        "c": tps("t2", 2, 3),
    }


def test_range_more_members_than_partitions_leaves_the_last_empty() -> None:
    result = RangeAssignor().assign({"t": 2}, subs(a=("t",), b=("t",), c=("t",)))
    assert result == {"a": tps("t", 0), "b": tps("t", 1), "c": []}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_topics_without_metadata_are_skipped(name: str) -> None:
    result = get_assignor(name).assign({"t": 2}, subs(a=("t", "missing"), b=("missing",)))
    assert result == {"a": tps("t", 0, 1), "b": []}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_no_members_gives_an_empty_assignment(name: str) -> None:
    assert get_assignor(name).assign({"t": 3}, {}) == {}


# Round robin (Kafka's RoundRobinAssignor docs)


def test_roundrobin_deals_sorted_partitions_to_sorted_members_in_turn() -> None:
    # Example members; partitions sorted by name, not hash code.
    t1 = ("T1",)
    result = RoundRobinAssignor().assign(
        {"T1": 10}, subs(**{"C2-1": t1, "C1-0": t1, "C2-0": t1, "C1-1": t1})
    )
    assert result == {
        "C1-0": tps("T1", 0, 4, 8),
        "C1-1": tps("T1", 1, 5, 9),
        "C2-0": tps("T1", 2, 6),
        "C2-1": tps("T1", 3, 7),
    }


def test_roundrobin_balances_across_topics_where_range_does_not() -> None:
    both = ("T1", "T2")
    result = RoundRobinAssignor().assign(
        {"T1": 10, "T2": 10}, subs(**{"C1-0": both, "C2-0": both, "C3-0": both})
    )
    assert counts(result) == {"C1-0": 7, "C2-0": 7, "C3-0": 6}


def test_roundrobin_skips_members_not_subscribed_to_the_topic() -> None:
    result = RoundRobinAssignor().assign({"t1": 2, "t2": 2}, subs(a=("t1", "t2"), b=("t2",)))
    # t1-0 -> a; t1-1: b skipped -> a; t2-0 -> b; t2-1 -> a.
    assert result == {"a": tps("t1", 0, 1) + tps("t2", 1), "b": tps("t2", 0)}


# Sticky


def test_sticky_fresh_group_is_balanced() -> None:
    both = ("t1", "t2")
    result = StickyAssignor().assign({"t1": 5, "t2": 5}, subs(a=both, b=both, c=both))
    assert sorted(counts(result).values()) == [3, 3, 4]


def test_sticky_member_leaving_moves_only_its_partitions() -> None:
    before = {"a": tps("t", 0, 1, 2, 3), "b": tps("t", 4, 5, 6), "c": tps("t", 7, 8, 9)}
    remaining = {m: Subscription(("t",), tuple(before[m])) for m in ("a", "b")}
    result = StickyAssignor().assign({"t": 10}, remaining)
    assert set(before["a"]) <= set(result["a"])
    assert set(before["b"]) <= set(result["b"])
    assert counts(result) == {"a": 5, "b": 5}


def test_sticky_member_joining_takes_only_what_balance_requires() -> None:
    owned = {"a": tps("t", 0, 1, 2, 3, 4), "b": tps("t", 5, 6, 7, 8, 9)}
    subscriptions = {m: Subscription(("t",), tuple(owned[m])) for m in owned}
    subscriptions["c"] = Subscription(("t",))
    result = StickyAssignor().assign({"t": 10}, subscriptions)
    assert sorted(counts(result).values()) == [3, 3, 4]
    # Exactly the three partitions c needs moved; a and b kept the rest.
    assert len(set(owned["a"]) & set(result["a"])) == len(result["a"])
    assert len(set(owned["b"]) & set(result["b"])) == len(result["b"])


def test_sticky_keeps_a_balanced_owned_assignment_that_range_would_reshuffle() -> None:
    owned = {"a": tps("t", 0, 2, 4), "b": tps("t", 1, 3, 5)}
    subscriptions = {m: Subscription(("t",), tuple(owned[m])) for m in owned}
    assert StickyAssignor().assign({"t": 6}, subscriptions) == owned
    assert RangeAssignor().assign({"t": 6}, subscriptions) != owned


def test_sticky_drops_owned_partitions_that_no_longer_apply() -> None:
    # t2 unsubscribed, t1-7 deleted (t1 shrank to 2 partitions).
    subscriptions = {"a": Subscription(("t1",), (*tps("t1", 0, 7), *tps("t2", 0)))}
    assert StickyAssignor().assign({"t1": 2, "t2": 1}, subscriptions) == {"a": tps("t1", 0, 1)}


def test_sticky_treats_a_partition_claimed_twice_as_unowned() -> None:
    subscriptions = {
        "a": Subscription(("t",), tuple(tps("t", 0, 1))),
        "b": Subscription(("t",), tuple(tps("t", 1, 2))),
    }
    result = StickyAssignor().assign({"t": 4}, subscriptions)
    assert ("t", 0) in result["a"] and ("t", 2) in result["b"]
    assert counts(result) == {"a": 2, "b": 2}


def test_sticky_balances_different_subscriptions_by_what_each_can_take() -> None:
    # a can only take t1; balance means b holds t2, not a 2/6 split.
    result = StickyAssignor().assign({"t1": 4, "t2": 4}, subs(a=("t1",), b=("t1", "t2")))
    assert result == {"a": tps("t1", 0, 1, 2, 3), "b": tps("t2", 0, 1, 2, 3)}


# Cooperative sticky (KIP-429)


def test_cooperative_moving_partitions_are_revoked_before_they_are_given() -> None:
    assignor = CooperativeStickyAssignor()
    first = {"a": Subscription(("t",), tuple(tps("t", 0, 1, 2, 3))), "b": Subscription(("t",))}
    round1 = assignor.assign({"t": 4}, first)
    assert len(round1["a"]) == 2
    assert round1["b"] == []  # withheld while a still owns them
    moving = revoked_partitions(first["a"].owned_partitions, round1["a"])
    assert len(moving) == 2

    # a revoked them and rejoined: now nobody owns them, so b gets them.
    second = {"a": Subscription(("t",), tuple(round1["a"])), "b": Subscription(("t",))}
    round2 = assignor.assign({"t": 4}, second)
    assert round2 == {"a": round1["a"], "b": moving}
    assert revoked_partitions(second["a"].owned_partitions, round2["a"]) == []


def test_cooperative_gives_unowned_partitions_at_once() -> None:
    # c left: its partitions belong to nobody, so no second round is needed.
    subscriptions = {
        "a": Subscription(("t",), tuple(tps("t", 0, 1))),
        "b": Subscription(("t",), tuple(tps("t", 2, 3))),
    }
    result = CooperativeStickyAssignor().assign({"t": 6}, subscriptions)
    assert result == StickyAssignor().assign({"t": 6}, subscriptions)
    assert counts(result) == {"a": 3, "b": 3}


def test_cooperative_stable_group_changes_nothing() -> None:
    subscriptions = {
        "a": Subscription(("t",), tuple(tps("t", 0, 1))),
        "b": Subscription(("t",), tuple(tps("t", 2, 3))),
    }
    assert CooperativeStickyAssignor().assign({"t": 4}, subscriptions) == {
        "a": tps("t", 0, 1),
        "b": tps("t", 2, 3),
    }


def test_revoked_partitions_is_owned_minus_assigned_sorted() -> None:
    owned = [*tps("t", 3), *tps("s", 1), *tps("t", 0)]
    assert revoked_partitions(owned, [*tps("t", 0), *tps("u", 9)]) == [("s", 1), ("t", 3)]
    assert revoked_partitions([], tps("t", 0)) == []


# Properties of all four assignors

TOPICS = ("a", "b", "c")
MEMBERS = tuple(f"m{i}" for i in range(6))


@st.composite
def group_scenarios(
    draw: st.DrawFn, identical: bool = False
) -> tuple[dict[str, int], dict[str, Subscription]]:
    """Partition counts and subscriptions; owned partitions may be stale, doubled or bogus."""
    partitions_per_topic = draw(
        st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9), min_size=1)
    )
    # "gone" is subscribed to but has no metadata; owned may name partitions that no longer exist.
    topic_names = [*sorted(partitions_per_topic), "gone"]
    ownable = [(t, p) for t in topic_names for p in range(partitions_per_topic.get(t, 2) + 1)]
    members = draw(st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=6, unique=True))
    topic_lists = st.lists(st.sampled_from(topic_names), min_size=1, unique=True).map(tuple)
    common = draw(topic_lists)
    subscriptions = {
        member: Subscription(
            common if identical else draw(topic_lists),
            tuple(draw(st.lists(st.sampled_from(ownable), max_size=8, unique=True))),
        )
        for member in members
    }
    return partitions_per_topic, subscriptions


def subscribed_partitions(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> set[TopicPartition]:
    topics = {t for sub in subscriptions.values() for t in sub.topics}
    return {TopicPartition(t, p) for t in topics for p in range(partitions_per_topic.get(t, 0))}


def check_well_formed(
    result: Assignment,
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
) -> None:
    """Every member present, lists sorted, no partition twice, only to a subscriber."""
    assert sorted(result) == sorted(subscriptions)
    seen: set[TopicPartition] = set()
    for member, partitions in result.items():
        assert partitions == sorted(partitions)
        for tp in partitions:
            assert tp not in seen
            seen.add(tp)
            assert tp[0] in subscriptions[member].topics
            assert 0 <= tp[1] < partitions_per_topic[tp[0]]


def check_kafka_balance(result: Assignment, subscriptions: Mapping[str, Subscription]) -> None:
    """Kafka's sticky balance: a member two ahead of another holds nothing the other could take."""
    for held in result.values():
        for receiver, other in result.items():
            if len(held) - len(other) >= 2:
                assert not any(t in subscriptions[receiver].topics for t, _ in held)


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky"])
@settings(max_examples=200, deadline=None)
@given(scenario=group_scenarios())
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(
    name: str, scenario: tuple[dict[str, int], dict[str, Subscription]]
) -> None:
    partitions_per_topic, subscriptions = scenario
    result = get_assignor(name).assign(partitions_per_topic, subscriptions)
    check_well_formed(result, partitions_per_topic, subscriptions)
    assigned = {tp for partitions in result.values() for tp in partitions}
    assert assigned == subscribed_partitions(partitions_per_topic, subscriptions)


@settings(max_examples=200, deadline=None)
@given(scenario=group_scenarios())
def test_cooperative_withholds_only_partitions_another_member_owns(
    scenario: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions_per_topic, subscriptions = scenario
    result = CooperativeStickyAssignor().assign(partitions_per_topic, subscriptions)
    check_well_formed(result, partitions_per_topic, subscriptions)
    target = StickyAssignor().assign(partitions_per_topic, subscriptions)
    claims = claims_of(subscriptions)
    for member, partitions in target.items():
        withheld = set(partitions) - set(result[member])
        assert set(result[member]) <= set(partitions)
        assert all(claims.get(tp, set()) - {member} for tp in withheld)
        # What is given is not still claimed by anyone else.
        assert not any(claims.get(tp, set()) - {member} for tp in result[member])


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@settings(max_examples=100, deadline=None)
@given(scenario=group_scenarios())
def test_result_does_not_depend_on_member_order(
    name: str, scenario: tuple[dict[str, int], dict[str, Subscription]]
) -> None:
    partitions_per_topic, subscriptions = scenario
    reordered = dict(reversed(list(subscriptions.items())))
    assignor = get_assignor(name)
    assert assignor.assign(partitions_per_topic, reordered) == assignor.assign(
        partitions_per_topic, subscriptions
    )


@settings(max_examples=200, deadline=None)
@given(scenario=group_scenarios())
def test_range_is_balanced_per_topic(
    scenario: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions_per_topic, subscriptions = scenario
    result = RangeAssignor().assign(partitions_per_topic, subscriptions)
    for topic in partitions_per_topic:
        per_member = [
            sum(1 for t, _ in result[m] if t == topic)
            for m, sub in subscriptions.items()
            if topic in sub.topics
        ]
        if per_member:
            assert max(per_member) - min(per_member) <= 1


@pytest.mark.parametrize("name", ["roundrobin", "sticky"])
@settings(max_examples=200, deadline=None)
@given(scenario=group_scenarios(identical=True))
def test_identical_subscriptions_are_balanced_within_one(
    name: str, scenario: tuple[dict[str, int], dict[str, Subscription]]
) -> None:
    partitions_per_topic, subscriptions = scenario
    sizes = counts(get_assignor(name).assign(partitions_per_topic, subscriptions)).values()
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=200, deadline=None)
@given(scenario=group_scenarios())
def test_sticky_is_balanced_for_any_subscriptions(
    scenario: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions_per_topic, subscriptions = scenario
    result = StickyAssignor().assign(partitions_per_topic, subscriptions)
    check_kafka_balance(result, subscriptions)
    by_topics: dict[frozenset[str], list[int]] = {}
    for member, sub in subscriptions.items():
        by_topics.setdefault(frozenset(sub.topics), []).append(len(result[member]))
    for sizes in by_topics.values():
        assert max(sizes) - min(sizes) <= 1


@settings(max_examples=200, deadline=None)
@given(scenario=group_scenarios(identical=True))
def test_sticky_moves_no_more_than_balance_requires(
    scenario: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    """With equal subscriptions each member keeps min(valid owned, new count) partitions."""
    partitions_per_topic, subscriptions = scenario
    result = StickyAssignor().assign(partitions_per_topic, subscriptions)
    claims = claims_of(subscriptions)
    for member, sub in subscriptions.items():
        valid = {
            tp
            for tp in sub.owned_partitions
            if claims[tp] == {member}
            and tp[0] in sub.topics
            and tp[1] < partitions_per_topic.get(tp[0], 0)
        }
        assert len(valid & set(result[member])) == min(len(valid), len(result[member]))


@settings(max_examples=200, deadline=None)
@given(scenario=group_scenarios())
def test_cooperative_reaches_a_complete_balanced_assignment_in_follow_up_rebalances(
    scenario: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions_per_topic, subscriptions = scenario
    assignor = CooperativeStickyAssignor()
    for _ in range(4):
        result = assignor.assign(partitions_per_topic, subscriptions)
        revoked = any(
            revoked_partitions(sub.owned_partitions, result[m]) for m, sub in subscriptions.items()
        )
        # Each member rejoins owning exactly what it was given.
        subscriptions = {
            m: Subscription(s.topics, tuple(result[m])) for m, s in subscriptions.items()
        }
        if not revoked and result == StickyAssignor().assign(partitions_per_topic, subscriptions):
            break
    else:
        pytest.fail(f"no stable assignment after 4 rebalances: {result}")
    assigned = {tp for partitions in result.values() for tp in partitions}
    assert assigned == subscribed_partitions(partitions_per_topic, subscriptions)
    check_kafka_balance(result, subscriptions)


# Registry and protocol choice


def test_registry_holds_the_four_assignors_under_their_names() -> None:
    assert sorted(ASSIGNORS) == ["cooperative-sticky", "range", "roundrobin", "sticky"]
    for name, assignor in ASSIGNORS.items():
        assert assignor.name == name
        assert get_assignor(name) is assignor


def test_unknown_assignor_names_itself_and_the_known_ones() -> None:
    with pytest.raises(ValueError, match="'fair'") as info:
        get_assignor("fair")
    for name in ASSIGNORS:
        assert name in str(info.value)


def test_choose_protocol_follows_the_first_members_preference() -> None:
    assert choose_protocol([["sticky", "range"], ["range", "sticky"]]) == "sticky"
    assert choose_protocol([["range", "sticky"], ["sticky", "range"]]) == "range"


def test_choose_protocol_skips_assignors_some_member_lacks() -> None:
    members = [["cooperative-sticky", "range"], ["range"], ["roundrobin", "range"]]
    assert choose_protocol(members) == "range"


def test_choose_protocol_single_member_gets_its_first_choice() -> None:
    assert choose_protocol([["roundrobin", "range"]]) == "roundrobin"


def test_choose_protocol_without_a_common_assignor_is_error_23() -> None:
    with pytest.raises(InconsistentGroupProtocolError) as info:
        choose_protocol([["range"], ["roundrobin"]])
    assert info.value.error is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert int(info.value.error) == 23
    assert "range" in str(info.value) and "roundrobin" in str(info.value)


def test_choose_protocol_for_no_members_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="no members"):
        choose_protocol([])
