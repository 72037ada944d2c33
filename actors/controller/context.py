"""What the active controller knows: live brokers, assignments, leadership and both state machines.

A mutable container with no I/O, rebuilt from ZooKeeper on every controller failover (Kafka's
ControllerContext). The controller is its only user and mutates it from its mailbox only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rafka.actors.controller.state_machines import PartitionState, ReplicaState
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.protocol.types import TopicPartition


@dataclass(frozen=True)
class ReassignedPartition:
    """A partition reassignment in progress: the replicas it started from (OAR) and its target
    (RAR)."""

    original: tuple[int, ...]
    target: tuple[int, ...]


@dataclass
class ControllerContext:
    """The controller's view of the cluster."""

    epoch: int = 0
    epoch_zk_version: int = -1
    live_brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    assignments: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsrAndEpoch] = field(default_factory=dict)
    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[tuple[str, int, int], ReplicaState] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    dead_incarnations: dict[int, int] = field(default_factory=dict)
    topics_to_be_deleted: set[str] = field(default_factory=set)
    topics_with_deletion_started: set[str] = field(default_factory=set)
    topics_ineligible_for_deletion: set[str] = field(default_factory=set)
    partitions_being_reassigned: dict[TopicPartition, ReassignedPartition] = field(
        default_factory=dict
    )
    reassignments_zk_version: int = -1
    """The version of ``/admin/reassign_partitions`` last read or written (-1: none)."""
    deletions_awaiting_reassignment: set[str] = field(default_factory=set)
    """Topics named under ``/admin/delete_topics`` while some of their partitions move: queued
    once the last of those reassignments completes, as Kafka holds such deletions back."""

    def is_queued_for_deletion(self, topic: str) -> bool:
        """Whether ``topic`` is being deleted: no elections, no leadership, no metadata for it."""
        return topic in self.topics_to_be_deleted

    def partitions(self) -> list[TopicPartition]:
        """Every partition of every topic not queued for deletion (those are left to the
        deletion manager: no elections, leadership or metadata for them)."""
        return [
            TopicPartition(t, p)
            for t, parts in self.assignments.items()
            if t not in self.topics_to_be_deleted
            for p in sorted(parts)
        ]

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        """Assigned replicas (AR) of a partition."""
        return self.assignments[tp[0]][tp[1]]

    def partitions_on(self, brokers: set[int]) -> list[TopicPartition]:
        """Partitions with a replica on any of ``brokers``."""
        return [tp for tp in self.partitions() if brokers.intersection(self.replicas(tp))]

    def partitions_led_by(self, brokers: set[int]) -> list[TopicPartition]:
        """Partitions whose current leader is one of ``brokers``."""
        return [
            tp
            for tp, state in self.leadership.items()
            if state.leader in brokers and tp[0] not in self.topics_to_be_deleted
        ]

    def partitions_in(self, state: PartitionState) -> list[TopicPartition]:
        """Partitions in a partition state."""
        return [tp for tp, current in self.partition_states.items() if current is state]

    def is_live(self, broker_id: int) -> bool:
        """Whether a broker is registered."""
        return broker_id in self.live_brokers

    def electable(self) -> set[int]:
        """Live brokers that may lead: not the ones in controlled shutdown."""
        return set(self.live_brokers) - self.shutting_down

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic."""
        self.assignments.pop(topic, None)
        self.topic_configs.pop(topic, None)
        self.topics_to_be_deleted.discard(topic)
        self.deletions_awaiting_reassignment.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)
        for tp in [tp for tp in self.leadership if tp[0] == topic]:
            del self.leadership[tp]
        for tp in [tp for tp in self.partition_states if tp[0] == topic]:
            del self.partition_states[tp]
        for key in [key for key in self.replica_states if key[0] == topic]:
            del self.replica_states[key]
        for tp in [tp for tp in self.partitions_being_reassigned if tp[0] == topic]:
            del self.partitions_being_reassigned[tp]
