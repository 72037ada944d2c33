"""Tests for rafka.actors.controller.assignment_plan: explicit assignments checked and growth
planned, each refusal naming what was wrong."""

from __future__ import annotations

import pytest

from rafka.actors.controller.assignment_plan import (
    added_partitions_assignment,
    check_assignment,
    new_topic_assignment,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.types import NewPartitions, NewTopic, ReplicaPlacement

LIVE = [0, 1, 2]
NO_RACKS: dict[int, str | None] = dict.fromkeys(LIVE)


def refusal(error: Errors, call: object, *args: object, **kwargs: object) -> str:
    assert callable(call)
    with pytest.raises(RafkaError) as raised:
        call(*args, **kwargs)
    assert raised.value.error is error
    return str(raised.value.message)


def test_a_good_explicit_assignment_comes_back_as_tuples_in_partition_order() -> None:
    assert check_assignment({1: [2, 0], 0: [0, 1]}, LIVE) == {0: (0, 1), 1: (2, 0)}


@pytest.mark.parametrize(
    ("assignment", "named"),
    [
        ({}, "empty"),
        ({0: [0, 0]}, "duplicate brokers in the replica assignment of partition 0: [0, 0]"),
        ({0: [0, 1], 1: [1]}, "partitions [1] have [1]"),
        ({0: [0, 5], 1: [6, 1]}, "unknown broker(s) [5, 6]"),
        ({0: [0], 2: [1]}, "consecutive integers from 0: got [0, 2]"),
        ({1: [0]}, "consecutive integers from 0: got [1]"),
        ({0: []}, "partition 0 has no replicas"),
    ],
)
def test_bad_explicit_assignments_are_refused_naming_the_problem(
    assignment: dict[int, list[int]], named: str
) -> None:
    message = refusal(Errors.INVALID_REPLICA_ASSIGNMENT, check_assignment, assignment, LIVE)
    assert named in message


def test_explicit_assignment_of_a_new_topic_must_agree_with_its_counts() -> None:
    agreeing = NewTopic("t", 2, 1, replica_assignments={0: [1], 1: [2]})
    assert new_topic_assignment(agreeing, NO_RACKS, ReplicaPlacement()) == {0: (1,), 1: (2,)}
    wrong = NewTopic("t", 3, 1, replica_assignments={0: [1], 1: [2]})
    message = refusal(
        Errors.INVALID_REQUEST, new_topic_assignment, wrong, NO_RACKS, ReplicaPlacement()
    )
    assert "3 partitions" in message


def test_a_new_topic_without_assignment_is_placed_by_kafkas_algorithm() -> None:
    placement = ReplicaPlacement(start_index=1, replica_shift=0)
    placed = new_topic_assignment(NewTopic("t", 3, 2), NO_RACKS, placement)
    assert placed == {0: (1, 2), 1: (2, 0), 2: (0, 1)}


def test_growing_places_only_the_added_partitions_with_partition_zeros_replication() -> None:
    existing = {0: (1, 2), 1: (2, 0)}
    added = added_partitions_assignment("t", existing, NewPartitions(4), NO_RACKS)
    assert sorted(added) == [2, 3]
    assert all(len(set(r)) == 2 for r in added.values())


@pytest.mark.parametrize(("total", "named"), [(1, "currently has 2"), (2, "already has 2")])
def test_growing_to_fewer_or_as_many_partitions_is_invalid_partitions(
    total: int, named: str
) -> None:
    message = refusal(
        Errors.INVALID_PARTITIONS,
        added_partitions_assignment,
        "t",
        {0: (0,), 1: (1,)},
        NewPartitions(total),
        NO_RACKS,
    )
    assert named in message and "'t'" in message


def test_explicit_new_assignments_number_from_the_current_count() -> None:
    existing = {0: (0, 1)}
    added = added_partitions_assignment("t", existing, NewPartitions(3, [[1, 2], [2, 0]]), NO_RACKS)
    assert added == {1: (1, 2), 2: (2, 0)}
    message = refusal(
        Errors.INVALID_REPLICA_ASSIGNMENT,
        added_partitions_assignment,
        "t",
        existing,
        NewPartitions(2, [[1, 2, 0]]),
        NO_RACKS,
    )
    assert "expected 2 replicas" in message


def test_growing_with_racks_spans_the_racks() -> None:
    racks: dict[int, str | None] = {0: "a", 1: "a", 2: "b", 3: "b"}
    added = added_partitions_assignment("t", {0: (0, 2)}, NewPartitions(9), racks)
    for replicas in added.values():
        assert {racks[b] for b in replicas} == {"a", "b"}
