"""Tests for rafka.actors.controller.state_machines: Kafka 2.8's partition and replica transition
tables."""

from __future__ import annotations

import itertools

import pytest

from rafka.actors.controller.state_machines import (
    PARTITION_VALID_PREVIOUS,
    REPLICA_VALID_PREVIOUS,
    PartitionState,
    ReplicaKey,
    ReplicaState,
    StateMachine,
    partition_state_machine,
    replica_state_machine,
    split_valid,
    valid_partition_transition,
    valid_replica_transition,
)
from rafka.protocol.types import TopicPartition

P = PartitionState
R = ReplicaState

# Written out by hand from Kafka 2.8's PartitionStateMachine.scala and
# ReplicaStateMachine.scala, as (from, to), so the tables are checked against
# an independent copy rather than against themselves.
VALID_PARTITION_TRANSITIONS: set[tuple[PartitionState, PartitionState]] = {
    (P.NON_EXISTENT_PARTITION, P.NEW_PARTITION),
    (P.NEW_PARTITION, P.ONLINE_PARTITION),
    (P.ONLINE_PARTITION, P.ONLINE_PARTITION),
    (P.OFFLINE_PARTITION, P.ONLINE_PARTITION),
    (P.NEW_PARTITION, P.OFFLINE_PARTITION),
    (P.ONLINE_PARTITION, P.OFFLINE_PARTITION),
    (P.OFFLINE_PARTITION, P.OFFLINE_PARTITION),
    (P.OFFLINE_PARTITION, P.NON_EXISTENT_PARTITION),
}

VALID_REPLICA_TRANSITIONS: set[tuple[ReplicaState, ReplicaState]] = {
    (R.NON_EXISTENT_REPLICA, R.NEW_REPLICA),
    (R.NEW_REPLICA, R.ONLINE_REPLICA),
    (R.ONLINE_REPLICA, R.ONLINE_REPLICA),
    (R.OFFLINE_REPLICA, R.ONLINE_REPLICA),
    (R.REPLICA_DELETION_INELIGIBLE, R.ONLINE_REPLICA),
    (R.NEW_REPLICA, R.OFFLINE_REPLICA),
    (R.ONLINE_REPLICA, R.OFFLINE_REPLICA),
    (R.OFFLINE_REPLICA, R.OFFLINE_REPLICA),
    (R.REPLICA_DELETION_INELIGIBLE, R.OFFLINE_REPLICA),
    (R.OFFLINE_REPLICA, R.REPLICA_DELETION_STARTED),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_SUCCESSFUL),
    (R.OFFLINE_REPLICA, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_SUCCESSFUL, R.NON_EXISTENT_REPLICA),
}


def _name(transition: tuple[PartitionState | ReplicaState, ...]) -> str:
    current, target = transition
    return f"{current.value}->{target.value}"


PARTITION_TRANSITIONS_BY_NAME = sorted(VALID_PARTITION_TRANSITIONS, key=_name)
REPLICA_TRANSITIONS_BY_NAME = sorted(VALID_REPLICA_TRANSITIONS, key=_name)


# Partition state machine


def test_new_to_online_partition_is_valid() -> None:
    assert valid_partition_transition(P.NEW_PARTITION, P.ONLINE_PARTITION)


def test_nonexistent_to_online_partition_is_invalid() -> None:
    assert not valid_partition_transition(P.NON_EXISTENT_PARTITION, P.ONLINE_PARTITION)


def test_nonexistent_to_offline_partition_is_invalid() -> None:
    assert not valid_partition_transition(P.NON_EXISTENT_PARTITION, P.OFFLINE_PARTITION)


def test_online_to_nonexistent_partition_is_invalid() -> None:
    # Deletion must take a partition offline first.
    assert not valid_partition_transition(P.ONLINE_PARTITION, P.NON_EXISTENT_PARTITION)


def test_online_to_new_partition_is_invalid() -> None:
    assert not valid_partition_transition(P.ONLINE_PARTITION, P.NEW_PARTITION)


def test_new_to_new_partition_is_invalid() -> None:
    assert not valid_partition_transition(P.NEW_PARTITION, P.NEW_PARTITION)


@pytest.mark.parametrize("transition", PARTITION_TRANSITIONS_BY_NAME, ids=_name)
def test_every_valid_partition_transition_is_valid(
    transition: tuple[PartitionState, PartitionState],
) -> None:
    assert valid_partition_transition(*transition)


def test_every_other_partition_transition_is_invalid() -> None:
    for transition in itertools.product(PartitionState, repeat=2):
        expected = transition in VALID_PARTITION_TRANSITIONS
        assert valid_partition_transition(*transition) is expected, _name(transition)


def test_partition_table_has_an_entry_for_every_state() -> None:
    assert set(PARTITION_VALID_PREVIOUS) == set(PartitionState)


# Replica state machine


def test_nonexistent_to_new_replica_is_valid() -> None:
    assert valid_replica_transition(R.NON_EXISTENT_REPLICA, R.NEW_REPLICA)


def test_deletion_ineligible_to_offline_replica_is_valid_so_deletion_can_retry() -> None:
    assert valid_replica_transition(R.REPLICA_DELETION_INELIGIBLE, R.OFFLINE_REPLICA)


def test_online_to_deletion_started_replica_is_invalid() -> None:
    # A replica must be stopped (Offline) before its deletion starts.
    assert not valid_replica_transition(R.ONLINE_REPLICA, R.REPLICA_DELETION_STARTED)


def test_deletion_started_to_online_replica_is_invalid() -> None:
    assert not valid_replica_transition(R.REPLICA_DELETION_STARTED, R.ONLINE_REPLICA)


def test_offline_to_nonexistent_replica_is_invalid() -> None:
    assert not valid_replica_transition(R.OFFLINE_REPLICA, R.NON_EXISTENT_REPLICA)


def test_nonexistent_to_online_replica_is_invalid() -> None:
    assert not valid_replica_transition(R.NON_EXISTENT_REPLICA, R.ONLINE_REPLICA)


def test_deletion_successful_to_new_replica_is_invalid() -> None:
    assert not valid_replica_transition(R.REPLICA_DELETION_SUCCESSFUL, R.NEW_REPLICA)


@pytest.mark.parametrize("transition", REPLICA_TRANSITIONS_BY_NAME, ids=_name)
def test_every_valid_replica_transition_is_valid(
    transition: tuple[ReplicaState, ReplicaState],
) -> None:
    assert valid_replica_transition(*transition)


def test_every_other_replica_transition_is_invalid() -> None:
    for transition in itertools.product(ReplicaState, repeat=2):
        expected = transition in VALID_REPLICA_TRANSITIONS
        assert valid_replica_transition(*transition) is expected, _name(transition)


def test_replica_table_has_an_entry_for_every_state() -> None:
    assert set(REPLICA_VALID_PREVIOUS) == set(ReplicaState)


# split_valid


def test_split_valid_partitions_keeps_batch_order() -> None:
    states = {
        ("orders", 0): P.NEW_PARTITION,
        ("orders", 1): P.NON_EXISTENT_PARTITION,
        ("orders", 2): P.OFFLINE_PARTITION,
        ("orders", 3): P.ONLINE_PARTITION,
        ("orders", 4): P.NON_EXISTENT_PARTITION,
    }
    valid, invalid = split_valid(states, P.ONLINE_PARTITION, PARTITION_VALID_PREVIOUS)
    assert valid == [("orders", 0), ("orders", 2), ("orders", 3)]
    assert invalid == [("orders", 1), ("orders", 4)]


def test_split_valid_replicas_for_deletion_start() -> None:
    states = {
        ("orders", 0, 1): R.OFFLINE_REPLICA,
        ("orders", 0, 2): R.ONLINE_REPLICA,
        ("orders", 0, 3): R.REPLICA_DELETION_INELIGIBLE,
    }
    valid, invalid = split_valid(states, R.REPLICA_DELETION_STARTED, REPLICA_VALID_PREVIOUS)
    assert valid == [("orders", 0, 1)]
    assert invalid == [("orders", 0, 2), ("orders", 0, 3)]


def test_split_valid_of_empty_batch_is_empty() -> None:
    assert split_valid({}, P.OFFLINE_PARTITION, PARTITION_VALID_PREVIOUS) == ([], [])


# ------------------------------------------------------------------ the machine consults the table


def replica_machine(
    states: dict[ReplicaKey, ReplicaState], log: list[str]
) -> StateMachine[ReplicaKey, ReplicaState]:
    return replica_state_machine(states, log.append)


@pytest.mark.parametrize(("current", "target"), list(itertools.product(R, R)))
def test_the_replica_machine_applies_exactly_the_transitions_kafka_allows(
    current: ReplicaState, target: ReplicaState
) -> None:
    key = ("events", 0, 1)
    states: dict[ReplicaKey, ReplicaState] = {}
    if current is not R.NON_EXISTENT_REPLICA:
        states[key] = current
    log: list[str] = []
    moved = replica_machine(states, log).transition([key], target)
    allowed = (current, target) in VALID_REPLICA_TRANSITIONS
    assert moved == ([key] if allowed else [])
    expected = target if allowed else current
    assert states.get(key, R.NON_EXISTENT_REPLICA) is expected
    assert bool(log) is not allowed


def test_an_illegal_replica_transition_is_refused_and_logged_the_rest_of_the_batch_applies() -> (
    None
):
    states = {("events", 0, 1): R.ONLINE_REPLICA, ("events", 0, 2): R.OFFLINE_REPLICA}
    log: list[str] = []
    moved = replica_machine(states, log).transition(
        [("events", 0, 1), ("events", 0, 2)], R.REPLICA_DELETION_STARTED
    )
    assert moved == [("events", 0, 2)]
    assert states[("events", 0, 1)] is R.ONLINE_REPLICA
    assert log == [
        "invalid transition of replica 1 of events-0 from OnlineReplica to "
        "ReplicaDeletionStarted; refused"
    ]


def test_entering_non_existent_forgets_the_replica_and_partition() -> None:
    replicas = {("events", 0, 1): R.REPLICA_DELETION_SUCCESSFUL}
    replica_machine(replicas, []).transition([("events", 0, 1)], R.NON_EXISTENT_REPLICA)
    assert replicas == {}
    tp = TopicPartition("events", 0)
    partitions = {tp: P.OFFLINE_PARTITION}
    partition_state_machine(partitions, lambda _line: None).transition(
        [tp], P.NON_EXISTENT_PARTITION
    )
    assert partitions == {}


def test_in_state_picks_the_items_in_a_state() -> None:
    states = {("t", 0, 1): R.ONLINE_REPLICA, ("t", 0, 2): R.OFFLINE_REPLICA}
    machine = replica_machine(states, [])
    assert machine.in_state([("t", 0, 1), ("t", 0, 2), ("t", 0, 3)], R.OFFLINE_REPLICA) == [
        ("t", 0, 2)
    ]
    assert machine.state(("t", 0, 3)) is R.NON_EXISTENT_REPLICA
