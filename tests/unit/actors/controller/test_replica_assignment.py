"""Tests for rafka.actors.controller.replica_assignment: the (p + j) mod n placement rule and topic
names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.actors.controller.replica_assignment import (
    assign_replicas,
    topic_names_collide,
    validate_topic_name,
)
from rafka.protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
)

# 5 brokers, 10 partitions, RF 3: partition i on brokers i, i+1, i+2 (mod 5).
FIVE_BROKERS_TEN_PARTITIONS_RF3 = {
    0: (0, 1, 2),
    1: (1, 2, 3),
    2: (2, 3, 4),
    3: (3, 4, 0),
    4: (4, 0, 1),
    5: (0, 1, 2),
    6: (1, 2, 3),
    7: (2, 3, 4),
    8: (3, 4, 0),
    9: (4, 0, 1),
}


# assign_replicas


@pytest.mark.parametrize(("partition", "replicas"), sorted(FIVE_BROKERS_TEN_PARTITIONS_RF3.items()))
def test_seed_placement_five_brokers_ten_partitions_rf3(
    partition: int, replicas: tuple[int, ...]
) -> None:
    # Brokers given unsorted: the rule works on their sorted order.
    assignment = assign_replicas([3, 0, 4, 1, 2], partitions=10, replication_factor=3)
    assert assignment[partition] == replicas


def test_seed_placement_covers_exactly_the_requested_partitions() -> None:
    assignment = assign_replicas(range(5), partitions=10, replication_factor=3)
    assert assignment == FIVE_BROKERS_TEN_PARTITIONS_RF3


def test_placement_uses_positions_in_sorted_broker_ids_not_the_ids() -> None:
    assignment = assign_replicas({30, 10, 20}, partitions=3, replication_factor=2)
    assert assignment == {0: (10, 20), 1: (20, 30), 2: (30, 10)}


def test_leaders_spread_evenly_when_partitions_are_a_multiple_of_brokers() -> None:
    assignment = assign_replicas(range(5), partitions=10, replication_factor=3)
    leaders = [replicas[0] for replicas in assignment.values()]
    assert sorted(leaders) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_adding_partitions_continues_the_rotation() -> None:
    added = assign_replicas(range(5), partitions=3, replication_factor=3, start_partition=10)
    whole = assign_replicas(range(5), partitions=13, replication_factor=3)
    assert added == {p: whole[p] for p in (10, 11, 12)}


def test_duplicate_broker_ids_count_once() -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([1, 1, 2], partitions=1, replication_factor=3)


@given(
    brokers=st.sets(st.integers(0, 1000), min_size=1, max_size=12),
    partitions=st.integers(1, 40),
    data=st.data(),
)
def test_replicas_of_a_partition_never_share_a_broker(
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
