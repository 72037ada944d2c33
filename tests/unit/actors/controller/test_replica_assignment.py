"""Tests for rafka.actors.controller.replica_assignment: Kafka's placement (rack-unaware and
rack-aware, checked against Kafka's published examples and by properties) and topic names."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.actors.controller.replica_assignment import (
    assign_replicas,
    broker_racks,
    rack_alternated_brokers,
    topic_names_collide,
    validate_topic_name,
)
from rafka.protocol.errors import (
    Errors,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    RafkaError,
)

# Kafka's AdminUtils doc comment and AdminTest: 5 brokers, 10 partitions, RF 3, start index 0.
# The first pass is the seeds' rule, replica j of partition p on broker p + j; partition 5 wraps
# around the brokers, so its followers shift by one more.
FIVE_BROKERS_TEN_PARTITIONS_RF3 = {
    0: (0, 1, 2),
    1: (1, 2, 3),
    2: (2, 3, 4),
    3: (3, 4, 0),
    4: (4, 0, 1),
    5: (0, 2, 3),
    6: (1, 3, 4),
    7: (2, 4, 0),
    8: (3, 0, 1),
    9: (4, 1, 2),
}
# Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers.
KAFKA_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
KAFKA_RACK_AWARE_SEVEN_PARTITIONS_RF3 = {
    0: (0, 3, 1),
    1: (3, 1, 5),
    2: (1, 5, 4),
    3: (5, 4, 2),
    4: (4, 2, 0),
    5: (2, 0, 3),
    6: (0, 4, 2),
}


# assign_replicas


@pytest.mark.parametrize(("partition", "replicas"), sorted(FIVE_BROKERS_TEN_PARTITIONS_RF3.items()))
def test_seed_placement_five_brokers_ten_partitions_rf3(
    partition: int, replicas: tuple[int, ...]
) -> None:
    # Brokers given unsorted: the rule works on their sorted order.
    assignment = assign_replicas(
        [3, 0, 4, 1, 2], partitions=10, replication_factor=3, start_index=0
    )
    assert assignment[partition] == replicas


def test_seed_placement_covers_exactly_the_requested_partitions() -> None:
    assignment = assign_replicas(range(5), partitions=10, replication_factor=3, start_index=0)
    assert assignment == FIVE_BROKERS_TEN_PARTITIONS_RF3


def test_placement_uses_positions_in_sorted_broker_ids_not_the_ids() -> None:
    assignment = assign_replicas({30, 10, 20}, partitions=3, replication_factor=2, start_index=0)
    assert assignment == {0: (10, 20), 1: (20, 30), 2: (30, 10)}


def test_leaders_spread_evenly_when_partitions_are_a_multiple_of_brokers() -> None:
    assignment = assign_replicas(range(5), partitions=10, replication_factor=3)
    leaders = [replicas[0] for replicas in assignment.values()]
    assert sorted(leaders) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_adding_partitions_continues_the_rotation() -> None:
    added = assign_replicas(range(5), 3, 3, start_partition=10, start_index=2, replica_shift=4)
    whole = assign_replicas(range(5), 13, 3, start_index=2, replica_shift=4)
    assert added == {p: whole[p] for p in (10, 11, 12)}


def test_start_index_moves_partition_zeros_leader_and_shift_moves_its_followers() -> None:
    assert assign_replicas(range(5), 1, 3, start_index=3, replica_shift=0) == {0: (3, 4, 0)}
    assert assign_replicas(range(5), 1, 3, start_index=3, replica_shift=1) == {0: (3, 0, 1)}


def test_without_fixed_parameters_the_start_and_shift_are_drawn_at_random() -> None:
    layouts = {
        tuple(assign_replicas(range(5), 1, 3, rng=random.Random(seed))[0]) for seed in range(40)
    }
    leaders = {layout[0] for layout in layouts}
    assert leaders == {0, 1, 2, 3, 4} and len(layouts) > 5


def test_kafkas_rack_alternated_broker_list() -> None:
    assert rack_alternated_brokers(KAFKA_RACKS) == [0, 3, 1, 5, 4, 2]
    without_5 = {b: r for b, r in KAFKA_RACKS.items() if b != 5}
    assert rack_alternated_brokers(without_5) == [0, 3, 1, 4, 2]


def test_kafkas_rack_aware_example_with_fixed_start() -> None:
    assignment = assign_replicas(KAFKA_RACKS, 7, 3, start_index=0)
    assert assignment == KAFKA_RACK_AWARE_SEVEN_PARTITIONS_RF3


def test_more_replicas_than_racks_still_span_every_rack() -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    for replicas in assign_replicas(racks, 6, 5).values():
        assert len(set(replicas)) == 5
        assert {racks[b] for b in replicas} == {"rack1", "rack2", "rack3"}


def test_a_broker_without_a_rack_among_racked_ones_is_an_invalid_assignment() -> None:
    with pytest.raises(RafkaError, match=r"brokers \[2\] have no rack") as raised:
        assign_replicas({0: "a", 1: "b", 2: None}, 3, 2)
    assert raised.value.error is Errors.INVALID_REPLICA_ASSIGNMENT


def test_rack_unaware_mode_ignores_the_racks() -> None:
    racks = broker_racks({0: "a", 1: "b", 2: None}, rack_aware=False)
    assert racks == {0: None, 1: None, 2: None}
    assert assign_replicas(racks, 3, 2, start_index=0) == {0: (0, 1), 1: (1, 2), 2: (2, 0)}


def test_no_broker_with_a_rack_places_rack_unaware() -> None:
    no_racks = assign_replicas(dict.fromkeys(range(5)), 10, 3, start_index=0)
    assert no_racks == FIVE_BROKERS_TEN_PARTITIONS_RF3


def test_duplicate_broker_ids_count_once() -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([1, 1, 2], partitions=1, replication_factor=3)


@given(
    brokers=st.sets(st.integers(0, 1000), min_size=1, max_size=12),
    partitions=st.integers(1, 40),
    data=st.data(),
)
def test_replicas_of_a_partition_never_share_a_broker_and_leaders_balance_within_one(
    brokers: set[int], partitions: int, data: st.DataObject
) -> None:
    replication_factor = data.draw(st.integers(1, len(brokers)))
    start = data.draw(st.integers(0, 100))
    assignment = assign_replicas(brokers, partitions, replication_factor, start_partition=start)
    assert sorted(assignment) == list(range(start, start + partitions))
    for replicas in assignment.values():
        assert len(replicas) == replication_factor
        assert len(set(replicas)) == replication_factor
        assert set(replicas) <= brokers
    _assert_leaders_balanced(list(brokers), assignment)


def test_replication_factor_above_broker_count_names_both_numbers() -> None:
    with pytest.raises(InvalidReplicationFactorError, match=r"replication factor 3 .* 2 available"):
        assign_replicas([0, 1], partitions=1, replication_factor=3)


@pytest.mark.parametrize("replication_factor", [0, -1])
def test_replication_factor_below_one_is_invalid(replication_factor: int) -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([0, 1], partitions=1, replication_factor=replication_factor)


@pytest.mark.parametrize("partitions", [0, -3])
def test_partition_count_below_one_is_invalid(partitions: int) -> None:
    with pytest.raises(InvalidPartitionsError):
        assign_replicas([0, 1], partitions=partitions, replication_factor=1)


def test_negative_start_partition_is_invalid() -> None:
    with pytest.raises(InvalidPartitionsError):
        assign_replicas([0, 1], partitions=1, replication_factor=1, start_partition=-1)


def test_no_brokers_is_an_invalid_replication_factor() -> None:
    with pytest.raises(InvalidReplicationFactorError, match="0 available"):
        assign_replicas([], partitions=1, replication_factor=1)


# validate_topic_name


@pytest.mark.parametrize(
    "name",
    ["a", "orders", "Orders.v2", "click_stream-2024", "...", "a" * 249, "__consumer_offsets"],
)
def test_legal_topic_names_pass(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "empty"),
        (".", r"'\.' or '\.\.'"),
        ("..", r"'\.' or '\.\.'"),
        ("a" * 250, "250 characters"),
        ("a b", "character other than"),
        ("ü", "character other than"),
        ("topic/1", "character other than"),
        ("orders\n", "character other than"),
    ],
)
def test_illegal_topic_names_are_rejected_naming_the_rule(name: str, rule: str) -> None:
    with pytest.raises(InvalidTopicError, match=rule):
        validate_topic_name(name)


def test_illegal_topic_name_error_names_the_topic() -> None:
    with pytest.raises(InvalidTopicError, match="'a b'"):
        validate_topic_name("a b")


# topic_names_collide


@pytest.mark.parametrize(
    ("a", "b", "collide"),
    [
        ("metrics.cpu", "metrics_cpu", True),
        ("a_b.c", "a.b_c", True),
        ("same", "same", True),
        ("metrics.cpu", "metrics-cpu", False),
        ("a", "b", False),
    ],
)
def test_dot_and_underscore_collide_in_metric_names(a: str, b: str, collide: bool) -> None:
    assert topic_names_collide(a, b) is collide
    assert topic_names_collide(b, a) is collide


# properties of the placement


racks_strategy = st.dictionaries(
    st.integers(0, 50), st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=12
)


@given(racks=racks_strategy, partitions=st.integers(1, 60), data=st.data())
def test_rack_aware_placement_is_distinct_balanced_and_spread(
    racks: dict[int, str], partitions: int, data: st.DataObject
) -> None:
    replication_factor = data.draw(st.integers(1, len(racks)))
    seed = data.draw(st.integers(0, 2**32))
    assignment = assign_replicas(racks, partitions, replication_factor, rng=random.Random(seed))
    assert sorted(assignment) == list(range(partitions))
    rack_count = len(set(racks.values()))
    for replicas in assignment.values():
        assert len(set(replicas)) == replication_factor
        assert len({racks[b] for b in replicas}) == min(replication_factor, rack_count)
    _assert_leaders_balanced(list(racks), assignment)


def _assert_leaders_balanced(brokers: list[int], assignment: dict[int, tuple[int, ...]]) -> None:
    leaders = Counter(replicas[0] for replicas in assignment.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1


def test_safe_mode_forgets_racks_unless_every_broker_has_one() -> None:
    assert broker_racks({0: "a", 1: "b", 2: None}, racks_if_all=True) == dict.fromkeys(range(3))
    assert broker_racks({0: "a", 1: "b"}, racks_if_all=True) == {0: "a", 1: "b"}
