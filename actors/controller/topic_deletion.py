"""Kafka's TopicDeletionManager: which replicas of the topics queued for deletion to stop and delete
now, which deletions wait, and which topics are gone, with no Ray and no ZooKeeper client.

A topic named under ``/admin/delete_topics`` is *queued*. Its deletion *starts* once: its partitions
go Offline, then NonExistent, and every live broker is told to forget it (UpdateMetadata with the
topic in ``deleted_topics``, so clients get UNKNOWN_TOPIC_OR_PARTITION at once). Then each replica
on a live broker goes OfflineReplica -> ReplicaDeletionStarted and its broker gets StopReplica with
deletion; each answer moves it to ReplicaDeletionSuccessful (or, with an error, to
ReplicaDeletionIneligible). A replica whose broker is down goes to ReplicaDeletionIneligible and its
topic is *ineligible*: the deletion pauses, without failing, until one of the topic's brokers starts
again. Once every replica is ReplicaDeletionSuccessful the controller removes the topic's znodes and
the replicas become NonExistentReplica. Every state change goes through the state machines' tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rafka.actors.controller.context import ControllerContext
from rafka.actors.controller.request_batch import RequestBatch
from rafka.actors.controller.state_machines import (
    PartitionState,
    ReplicaKey,
    ReplicaState,
    partition_state_machine,
    replica_state_machine,
)
from rafka.protocol.types import TopicPartition

_R = ReplicaState


class TopicDeletionManager:
    """Deletion decisions over the controller's context; control requests go into ``batch``."""

    def __init__(
        self, ctx: ControllerContext, batch: RequestBatch, log: Callable[[str], None]
    ) -> None:
        self.ctx = ctx
        self.batch = batch
        self.log = log
        self.replicas = replica_state_machine(ctx.replica_states, log)
        self.partitions = partition_state_machine(ctx.partition_states, log)

    def replicas_of(self, topic: str) -> list[ReplicaKey]:
        """Every replica of ``topic``, partition by partition."""
        return [
            (topic, partition, broker)
            for partition, brokers in sorted(self.ctx.assignments.get(topic, {}).items())
            for broker in brokers
        ]

    def enqueue(self, topics: Iterable[str]) -> list[str]:
        """Queue topics for deletion (a topic with partitions being reassigned waits for them);
        return the named topics that do not exist (their admin nodes are stale)."""
        unknown = []
        for topic in sorted(set(topics)):
            moving = [tp for tp in self.ctx.partitions_being_reassigned if tp.topic == topic]
            if topic not in self.ctx.assignments:
                unknown.append(topic)
            elif moving:
                if topic not in self.ctx.deletions_awaiting_reassignment:
                    self.ctx.deletions_awaiting_reassignment.add(topic)
                    self.log(
                        f"deletion of topic {topic} waits for the reassignment of partitions "
                        f"{sorted(tp.partition for tp in moving)}"
                    )
            elif topic not in self.ctx.topics_to_be_deleted:
                self.ctx.topics_to_be_deleted.add(topic)
                self.log(f"topic {topic} queued for deletion")
        return unknown

    def fail_replicas(self, keys: Iterable[ReplicaKey]) -> None:
        """These replicas cannot be deleted now (their broker is down, or it answered with an
        error): they go ReplicaDeletionIneligible and their topics pause."""
        pending = [k for k in keys if self.replicas.state(k) is not _R.REPLICA_DELETION_SUCCESSFUL]
        self.replicas.transition(
            [k for k in pending if self.replicas.state(k) is not _R.REPLICA_DELETION_STARTED],
            _R.OFFLINE_REPLICA,
        )
        parked = self.replicas.transition(pending, _R.REPLICA_DELETION_INELIGIBLE)
        topics = sorted({key[0] for key in parked} - self.ctx.topics_ineligible_for_deletion)
        for topic in topics:
            self.log(f"deletion of topic {topic} paused: a replica cannot be deleted now")
        self.ctx.topics_ineligible_for_deletion.update(topics)

    def brokers_started(self, brokers: set[int]) -> None:
        """Topics with a replica on a restarted broker may be tried again."""
        for topic in sorted(self.ctx.topics_ineligible_for_deletion):
            if any(key[2] in brokers for key in self.replicas_of(topic)):
                self.ctx.topics_ineligible_for_deletion.discard(topic)
                self.log(f"deletion of topic {topic} resumes: brokers {sorted(brokers)} started")

    def replicas_deleted(self, keys: Iterable[ReplicaKey]) -> None:
        """The brokers deleted these replicas: ReplicaDeletionSuccessful."""
        self.replicas.transition(keys, _R.REPLICA_DELETION_SUCCESSFUL)

    def resume(self) -> list[str]:
        """Start or retry the deletions that can proceed; return the topics whose every replica is
        deleted (their znodes can go)."""
        ready: list[str] = []
        eligible: list[str] = []
        for topic in sorted(self.ctx.topics_to_be_deleted):
            states = [self.replicas.state(key) for key in self.replicas_of(topic)]
            if all(state is _R.REPLICA_DELETION_SUCCESSFUL for state in states):
                ready.append(topic)
            elif _R.REPLICA_DELETION_STARTED in states:
                continue
            elif topic not in self.ctx.topics_ineligible_for_deletion:
                eligible.append(topic)
        for topic in eligible:
            self._delete_topic(topic)
        return ready

    def complete(self, topic: str) -> None:
        """The topic's znodes are gone: its replicas become NonExistentReplica and the context
        forgets it."""
        self.replicas.transition(self.replicas_of(topic), _R.NON_EXISTENT_REPLICA)
        self.ctx.remove_topic(topic)
        self.batch.add_deleted_topics([topic])
        self.log(f"deletion of topic {topic} completed")

    def _delete_topic(self, topic: str) -> None:
        """Kafka's onTopicDeletion: on first start the partitions go Offline then NonExistent and
        the brokers forget the topic; then every replica not yet deleted is stopped and deleted."""
        ctx = self.ctx
        partitions = [TopicPartition(topic, p) for p in sorted(ctx.assignments[topic])]
        if topic not in ctx.topics_with_deletion_started:
            ctx.topics_with_deletion_started.add(topic)
            self.partitions.transition(partitions, PartitionState.OFFLINE_PARTITION)
            self.partitions.transition(partitions, PartitionState.NON_EXISTENT_PARTITION)
            self.log(f"deletion of topic {topic} started")
        self.batch.add_deleted_topics([topic])
        keys = [
            k
            for k in self.replicas_of(topic)
            if self.replicas.state(k) is not _R.REPLICA_DELETION_SUCCESSFUL
        ]
        dead = [k for k in keys if not ctx.is_live(k[2])]
        live = [k for k in keys if ctx.is_live(k[2])]
        if dead:
            self.fail_replicas(dead)
        started = self.replicas.transition(
            self.replicas.transition(live, _R.OFFLINE_REPLICA), _R.REPLICA_DELETION_STARTED
        )
        for key in started:
            self.batch.add_stop_replica(key[2], TopicPartition(key[0], key[1]), delete=True)
