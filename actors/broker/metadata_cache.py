"""A broker's metadata cache: live brokers, the controller and every partition's leadership.

Fed only by the controller's UpdateMetadata requests (never read from ZooKeeper on the request
path), so every broker answers Metadata requests from memory, as Kafka's brokers do.
"""

from __future__ import annotations

from rafka.protocol.errors import Errors
from rafka.protocol.messages.control import UpdateMetadataRequest
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    PartitionMetadata,
    TopicMetadata,
)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class MetadataCache:
    """The cluster as the controller last described it to this broker."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerMetadata] = {}
        self.controller_id = -1
        self.topics: dict[str, dict[int, PartitionMetadata]] = {}

    def update(self, request: UpdateMetadataRequest) -> None:
        """Apply UpdateMetadata: replace the broker list, update (or replace, if ``full``)
        partitions."""
        self.brokers = {b.broker_id: b for b in request.live_brokers}
        self.controller_id = request.controller_id
        if request.full:
            self.topics = {}
        for topic in request.deleted_topics:
            self.topics.pop(topic, None)
        live = set(self.brokers)
        for update in request.topics:
            partitions = self.topics.setdefault(update.topic, {})
            for partition in update.partitions:
                offline = tuple(r for r in partition.replicas if r not in live)
                # A leader that is not live is no leader to clients (Kafka reports -1): the state
                # znode keeps naming a dead leader while no in-sync replica can take over.
                leader = partition.leader if partition.leader in live else -1
                error = Errors.LEADER_NOT_AVAILABLE if leader < 0 else Errors.NONE
                partitions[partition.partition] = PartitionMetadata(
                    partition.partition,
                    leader,
                    partition.leader_epoch,
                    partition.replicas,
                    partition.isr,
                    offline,
                    error,
                )

    def topic_metadata(self, names: tuple[str, ...] | None) -> tuple[TopicMetadata, ...]:
        """Metadata of the named topics (all when None); unknown ones carry
        UNKNOWN_TOPIC_OR_PARTITION."""
        wanted = sorted(self.topics) if names is None else names
        result = []
        for name in wanted:
            partitions = self.topics.get(name)
            if partitions is None:
                result.append(TopicMetadata(name, (), Errors.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                ordered = tuple(partitions[p] for p in sorted(partitions))
                result.append(TopicMetadata(name, ordered, Errors.NONE, name in INTERNAL_TOPICS))
        return tuple(result)
