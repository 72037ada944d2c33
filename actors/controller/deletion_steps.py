"""The controller core's topic deletion steps: the DeleteTopics request, the admin nodes, the
brokers' StopReplica answers and resuming deletions, over ``TopicDeletionManager``'s decisions.

A mixin of ``ControllerCore``, kept apart so the core stays about elections and brokers; like the
core it has no Ray, no ZooKeeper client and no event loop.
"""

from __future__ import annotations

from rafka.actors.controller.effects import (
    DeleteTopicsReply,
    DeleteTopicZnodes,
    QueueTopicDeletion,
)
from rafka.actors.controller.events import DeleteTopics, StopReplicaAnswered, ZkWriteConflict
from rafka.actors.controller.operation import OperationRunner, Step
from rafka.actors.controller.state_machines import (
    PartitionState,
    ReplicaKey,
    ReplicaState,
    StateMachine,
    partition_state_machine,
    replica_state_machine,
)
from rafka.actors.controller.topic_deletion import TopicDeletionManager
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import DeleteTopicResult
from rafka.protocol.types import TopicPartition


class TopicDeletionSteps(OperationRunner):
    """The deletion operations of the controller core, and its state machines over the context."""

    active: bool
    delete_topic_enable: bool

    def _replica_states(self) -> StateMachine[ReplicaKey, ReplicaState]:
        return replica_state_machine(self.ctx.replica_states, self._log)

    def _partition_states(self) -> StateMachine[TopicPartition, PartitionState]:
        return partition_state_machine(self.ctx.partition_states, self._log)

    def _deletion(self) -> TopicDeletionManager:
        return TopicDeletionManager(self.ctx, self._batch, self._log)

    def _delete_topics(self, event: DeleteTopics) -> Step:
        """Admin DeleteTopics: queue existing topics under ``/admin/delete_topics`` and answer;
        the deletion itself runs on."""
        ctx = self.ctx
        results: dict[int, DeleteTopicResult] = {}
        queued: dict[str, list[int]] = {}
        for i, name in enumerate(event.topics):
            if not self.active:
                error, message = Errors.NOT_CONTROLLER, f"broker {self.broker_id} is not controller"
            elif not self.delete_topic_enable:
                error, message = Errors.TOPIC_DELETION_DISABLED, "delete_topic_enable is false"
            elif name not in ctx.assignments:
                error, message = Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
            else:
                queued.setdefault(name, []).append(i)
                continue
            results[i] = DeleteTopicResult(name, error, message)

        def reply() -> DeleteTopicsReply:
            moved = f"broker {self.broker_id} stopped being the controller"
            return DeleteTopicsReply(
                event.request_id,
                tuple(
                    results.get(i, DeleteTopicResult(name, Errors.NOT_CONTROLLER, moved))
                    for i, name in enumerate(event.topics)
                ),
            )

        self._abort_reply = reply
        # An existing admin node is a deletion already queued: either outcome queues it.
        yield from self._perform(tuple(QueueTopicDeletion(name) for name in queued))
        for name, indexes in queued.items():
            for i in indexes:
                results[i] = DeleteTopicResult(name, Errors.NONE)
        self._reply(reply())
        yield from self._topic_deletions(frozenset(queued))

    def _topic_deletions(self, names: frozenset[str]) -> Step:
        """Topics named under ``/admin/delete_topics``: queue them and resume deletions; admin
        nodes of topics that do not exist are removed."""
        if not names:
            return
        if not self.delete_topic_enable:
            self._log(f"topic deletion is disabled; ignoring requests for {sorted(names)}")
            return
        unknown = self._deletion().enqueue(names)
        yield from self._resume_deletions(unknown)

    def _stop_replica_answered(self, event: StopReplicaAnswered) -> Step:
        """A broker answered StopReplica with deletion: its replicas are deleted, or failed."""
        deletion = self._deletion()
        failed = {
            (e.topic, e.partition) for e in event.partition_errors if e.error is not Errors.NONE
        }
        keys = [
            (topic, partition, event.broker_id)
            for topic, partition in event.partitions
            if self.ctx.is_queued_for_deletion(topic)
        ]
        if event.error is not Errors.NONE:
            failed = {key[:2] for key in keys}
        deletion.replicas_deleted([key for key in keys if key[:2] not in failed])
        deletion.fail_replicas([key for key in keys if key[:2] in failed])
        yield from self._resume_deletions()

    def _resume_deletions(self, stale: list[str] | None = None) -> Step:
        """Start or retry what deletions can proceed; remove the znodes of topics whose replicas
        are all deleted (and the admin nodes of ``stale`` names), then forget those topics."""
        deletion = self._deletion()
        done = [*deletion.resume(), *(stale or [])]
        writes = tuple(DeleteTopicZnodes(topic, self.ctx.epoch_zk_version) for topic in done)
        outcomes = yield from self._perform(writes)
        for write in writes:
            if isinstance(outcomes[write], ZkWriteConflict):
                self._log(f"znodes of topic {write.name} changed while being removed")
            deletion.complete(write.name)
