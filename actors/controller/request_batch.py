"""Control requests gathered while one event is processed, then sent per broker in one go.

Kafka's ControllerBrokerRequestBatch: an event may touch many partitions; the brokers get one
LeaderAndIsr and one UpdateMetadata each, not one per partition.
"""

from __future__ import annotations

from collections import defaultdict

from rafka.actors.controller.context import ControllerContext
from rafka.protocol.messages.control import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    TopicPartitions,
    UpdateMetadataRequest,
)
from rafka.protocol.messages.metadata import BrokerMetadata, PartitionMetadata
from rafka.protocol.types import TopicPartition


class RequestBatch:
    """LeaderAndIsr per broker plus the partitions whose metadata every live broker must learn."""

    def __init__(self) -> None:
        self.leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = (
            defaultdict(dict)
        )
        self.metadata_partitions: set[TopicPartition] = set()
        self.metadata_full_to: set[int] = set()
        self.brokers_changed = False
        self.deleted_topics: set[str] = set()
        self.stop_replica: dict[tuple[int, bool], set[TopicPartition]] = defaultdict(set)

    def add_leader_and_isr(
        self, ctx: ControllerContext, brokers: list[int], tp: TopicPartition, is_new: bool = False
    ) -> None:
        """Send ``tp``'s current leadership to ``brokers`` (live ones only) and to everyone's
        metadata."""
        state = ctx.leadership[tp]
        request_state = LeaderAndIsrPartitionState(
            tp[0],
            tp[1],
            ctx.epoch,
            state.leader,
            state.leader_epoch,
            state.isr,
            state.zk_version,
            ctx.replicas(tp),
            is_new,
        )
        for broker in brokers:
            if ctx.is_live(broker):
                self.leader_and_isr[broker][tp] = request_state
        self.metadata_partitions.add(tp)

    def add_update_metadata(self, partitions: list[TopicPartition]) -> None:
        """Tell every live broker about these partitions."""
        self.metadata_partitions.update(partitions)

    def add_broker_change(self) -> None:
        """The set of live brokers changed: every live broker must learn it, even with no
        partition moved."""
        self.brokers_changed = True

    def add_deleted_topics(self, topics: list[str]) -> None:
        """Every live broker must forget these topics (their deletion began)."""
        self.deleted_topics.update(topics)

    def add_stop_replica(self, broker: int, tp: TopicPartition, delete: bool) -> None:
        """Ask ``broker`` to stop its replica of ``tp``, deleting its log if ``delete``."""
        self.stop_replica[(broker, delete)].add(tp)

    def stop_replica_requests(
        self, ctx: ControllerContext, controller_id: int
    ) -> list[tuple[int, StopReplicaRequest]]:
        """StopReplica per live broker, without deletion first, sent after the other requests."""
        return [
            (broker, StopReplicaRequest(controller_id, ctx.epoch, tuple(sorted(tps)), delete))
            for (broker, delete), tps in sorted(self.stop_replica.items())
            if tps and ctx.is_live(broker)
        ]

    def add_full_metadata(self, brokers: list[int]) -> None:
        """Give these brokers the whole cluster's metadata (after failover or start-up)."""
        self.metadata_full_to.update(brokers)

    def build(
        self, ctx: ControllerContext, controller_id: int
    ) -> tuple[dict[int, LeaderAndIsrRequest], dict[int, UpdateMetadataRequest]]:
        """The requests to send: LeaderAndIsr per broker, UpdateMetadata per live broker."""
        leader_and_isr = {
            broker: LeaderAndIsrRequest(controller_id, ctx.epoch, tuple(states.values()))
            for broker, states in self.leader_and_isr.items()
            if states
        }
        live = tuple(
            BrokerMetadata(b, reg.host, reg.node_id, reg.rack, reg.endpoints)
            for b, reg in sorted(ctx.live_brokers.items())
        )
        update: dict[int, UpdateMetadataRequest] = {}
        deleted = tuple(sorted(self.deleted_topics))
        if self.metadata_partitions or self.metadata_full_to or self.brokers_changed or deleted:
            partial = _topics(ctx, self.metadata_partitions)
            full = _topics(ctx, set(ctx.leadership)) if self.metadata_full_to else ()
            for broker in ctx.live_brokers:
                if broker in self.metadata_full_to:
                    update[broker] = UpdateMetadataRequest(
                        controller_id, ctx.epoch, live, full, full=True
                    )
                else:
                    update[broker] = UpdateMetadataRequest(
                        controller_id, ctx.epoch, live, partial, deleted
                    )
        return leader_and_isr, update


def _topics(ctx: ControllerContext, partitions: set[TopicPartition]) -> tuple[TopicPartitions, ...]:
    by_topic: dict[str, list[PartitionMetadata]] = defaultdict(list)
    for tp in sorted(partitions):
        state = ctx.leadership.get(tp)
        if state is None or tp[0] not in ctx.assignments or ctx.is_queued_for_deletion(tp[0]):
            continue
        by_topic[tp[0]].append(
            PartitionMetadata(tp[1], state.leader, state.leader_epoch, ctx.replicas(tp), state.isr)
        )
    return tuple(TopicPartitions(topic, tuple(parts)) for topic, parts in sorted(by_topic.items()))
