"""The controller's partition and replica state machines, as data.

Kafka's controller tracks every partition and every replica in a small state
machine (``PartitionStateMachine`` / ``ReplicaStateMachine``); each state lists
the states it may be entered from, and a transition from anywhere else is a
bug that the controller logs to the state-change log and skips. Keeping the
states and tables here, apart from the actions, lets the controller validate a
batch first (``split_valid``) and lets tests check the tables on their own;
``StateMachine`` applies a batch through the table, refusing and logging what
it does not allow.

The tables are Kafka 2.8's (KafkaController's PartitionStateMachine and ReplicaStateMachine).
Unlike 0.8-0.11's partition table, 2.8's also allows Online -> Online (re-electing,
e.g. for a preferred replica) and Offline -> Offline (an election that failed
again), which the controller needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Generic, TypeVar

from rafka.protocol.types import TopicPartition


class PartitionState(Enum):
    """A partition's state in the controller, and what entering each state implies.

    ========================  ==================================================
    State                     Meaning, and the action on entering it
    ========================  ==================================================
    NON_EXISTENT_PARTITION    Never created, or deleted. Entering: forget the
                              partition's state (topic deletion finished).
    NEW_PARTITION             Created with an assignment but no leader or ISR
                              yet. Entering: load the assigned replicas into
                              the controller's cache.
    ONLINE_PARTITION          A leader was elected. Entering: elect (from New:
                              first live replica, ISR = live replicas; else by
                              the ElectionStrategy), write leader and ISR to
                              ZooKeeper, send LeaderAndIsr to the replicas and
                              UpdateMetadata to every live broker.
    OFFLINE_PARTITION         The leader died (or no leader could be elected).
                              Entering: only mark the state; the next election
                              brings it back Online.
    ========================  ==================================================
    """

    # Values are Kafka's names, so state-change logs read as Kafka's do.
    NEW_PARTITION = "NewPartition"
    ONLINE_PARTITION = "OnlinePartition"
    OFFLINE_PARTITION = "OfflinePartition"
    NON_EXISTENT_PARTITION = "NonExistentPartition"


_P = PartitionState

PARTITION_VALID_PREVIOUS: dict[PartitionState, frozenset[PartitionState]] = {
    _P.NEW_PARTITION: frozenset({_P.NON_EXISTENT_PARTITION}),
    _P.ONLINE_PARTITION: frozenset({_P.NEW_PARTITION, _P.ONLINE_PARTITION, _P.OFFLINE_PARTITION}),
    _P.OFFLINE_PARTITION: frozenset({_P.NEW_PARTITION, _P.ONLINE_PARTITION, _P.OFFLINE_PARTITION}),
    _P.NON_EXISTENT_PARTITION: frozenset({_P.OFFLINE_PARTITION}),
}
"""Target state -> the states a partition may move to it from."""


class ReplicaState(Enum):
    """A replica's state in the controller, and what entering each state implies.

    ===========================  ===============================================
    State                        Meaning, and the action on entering it
    ===========================  ===============================================
    NEW_REPLICA                  Created by a reassignment; may only follow.
                                 Entering: send it LeaderAndIsr with the current
                                 leader and ISR, if the partition has a leader.
    ONLINE_REPLICA               Started and part of the assignment; may lead or
                                 follow. Entering from New: add it to the
                                 cached assignment; otherwise send it
                                 LeaderAndIsr and UpdateMetadata to all brokers.
    OFFLINE_REPLICA              Its broker is down (or it is being removed).
                                 Entering: StopReplica without deletion; drop it
                                 from the ISR and send the shrunk ISR to the
                                 remaining replicas.
    REPLICA_DELETION_STARTED     Topic deletion began. Entering: StopReplica
                                 with deletion.
    REPLICA_DELETION_SUCCESSFUL  The broker deleted it without error. Entering:
                                 only mark the state.
    REPLICA_DELETION_INELIGIBLE  Deletion failed or cannot proceed (e.g. its
                                 broker is down). Entering: only mark the state;
                                 a retry moves it back to Offline.
    NON_EXISTENT_REPLICA         Deleted. Entering: remove it from the cached
                                 assignment and forget its state.
    ===========================  ===============================================
    """

    NEW_REPLICA = "NewReplica"
    ONLINE_REPLICA = "OnlineReplica"
    OFFLINE_REPLICA = "OfflineReplica"
    REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
    REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT_REPLICA = "NonExistentReplica"


_R = ReplicaState

# Ineligible -> Offline is how a stalled topic deletion is retried (Offline then
# leads to DeletionStarted again); Ineligible -> Online is its broker coming back.
REPLICA_VALID_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW_REPLICA: frozenset({_R.NON_EXISTENT_REPLICA}),
    _R.ONLINE_REPLICA: frozenset(
        {_R.NEW_REPLICA, _R.ONLINE_REPLICA, _R.OFFLINE_REPLICA, _R.REPLICA_DELETION_INELIGIBLE}
    ),
    _R.OFFLINE_REPLICA: frozenset(
        {_R.NEW_REPLICA, _R.ONLINE_REPLICA, _R.OFFLINE_REPLICA, _R.REPLICA_DELETION_INELIGIBLE}
    ),
    _R.REPLICA_DELETION_STARTED: frozenset({_R.OFFLINE_REPLICA}),
    _R.REPLICA_DELETION_SUCCESSFUL: frozenset({_R.REPLICA_DELETION_STARTED}),
    _R.REPLICA_DELETION_INELIGIBLE: frozenset({_R.OFFLINE_REPLICA, _R.REPLICA_DELETION_STARTED}),
    _R.NON_EXISTENT_REPLICA: frozenset({_R.REPLICA_DELETION_SUCCESSFUL}),
}
"""Target state -> the states a replica may move to it from."""


def valid_partition_transition(current: PartitionState, target: PartitionState) -> bool:
    """Whether a partition in ``current`` may move to ``target``."""
    return current in PARTITION_VALID_PREVIOUS[target]


def valid_replica_transition(current: ReplicaState, target: ReplicaState) -> bool:
    """Whether a replica in ``current`` may move to ``target``."""
    return current in REPLICA_VALID_PREVIOUS[target]


K = TypeVar("K")
S = TypeVar("S", PartitionState, ReplicaState)
E = TypeVar("E", bound=Enum)


def split_valid(
    items: Mapping[K, S],
    target: S,
    table: Mapping[S, frozenset[S]],
) -> tuple[list[K], list[K]]:
    """Split a batch by whether each item may move from its current state to ``target``.

    ``items`` maps each item (a partition, or a partition's replica) to its
    current state; ``table`` is ``PARTITION_VALID_PREVIOUS`` or
    ``REPLICA_VALID_PREVIOUS``. Returns ``(valid, invalid)`` in ``items``'
    order, so the controller acts on the valid ones and logs the rest, as
    Kafka's ``handleStateChanges`` does, instead of failing the whole batch.
    """
    allowed = table[target]
    valid: list[K] = []
    invalid: list[K] = []
    for item, current in items.items():
        (valid if current in allowed else invalid).append(item)
    return valid, invalid


ReplicaKey = tuple[str, int, int]
"""A replica as the controller's context keys it: topic, partition, broker id."""


class StateMachine(Generic[K, E]):
    """Moves items between states, consulting a transition table: the only way states change.

    Kafka's ``handleStateChanges``: a batch moves to ``target``; an item whose current state may
    not precede ``target`` is refused (left as it is) and the refusal is logged, as the
    state-change log must tell why a partition or replica did not move. ``absent`` is the state of
    an item the controller holds no state for (NonExistent); entering it forgets the item.
    """

    def __init__(
        self,
        states: dict[K, E],
        table: Mapping[E, frozenset[E]],
        absent: E,
        describe: Callable[[K], str],
        log: Callable[[str], None],
    ) -> None:
        self.states = states
        self.table = table
        self.absent = absent
        self.describe = describe
        self.log = log

    def state(self, item: K) -> E:
        """The item's current state (``absent`` if none is held)."""
        return self.states.get(item, self.absent)

    def transition(self, items: Iterable[K], target: E) -> list[K]:
        """Move every item that may go to ``target``; log the refused ones; return the moved."""
        current = {item: self.state(item) for item in items}
        allowed = self.table[target]
        valid = [item for item, state in current.items() if state in allowed]
        invalid = [item for item, state in current.items() if state not in allowed]
        for item in invalid:
            self.log(
                f"invalid transition of {self.describe(item)} from {current[item].value} to "
                f"{target.value}; refused"
            )
        for item in valid:
            if target is self.absent:
                self.states.pop(item, None)
            else:
                self.states[item] = target
        return valid

    def in_state(self, items: Iterable[K], state: E) -> list[K]:
        """The items among ``items`` that are in ``state``."""
        return [item for item in items if self.state(item) is state]


def replica_state_machine(
    states: dict[ReplicaKey, ReplicaState], log: Callable[[str], None]
) -> StateMachine[ReplicaKey, ReplicaState]:
    """Kafka's ReplicaStateMachine over the context's replica states."""
    return StateMachine(
        states,
        REPLICA_VALID_PREVIOUS,
        ReplicaState.NON_EXISTENT_REPLICA,
        lambda key: f"replica {key[2]} of {key[0]}-{key[1]}",
        log,
    )


def partition_state_machine(
    states: dict[TopicPartition, PartitionState], log: Callable[[str], None]
) -> StateMachine[TopicPartition, PartitionState]:
    """Kafka's PartitionStateMachine over the context's partition states."""
    return StateMachine(
        states,
        PARTITION_VALID_PREVIOUS,
        PartitionState.NON_EXISTENT_PARTITION,
        lambda tp: f"{tp[0]}-{tp[1]}",
        log,
    )
