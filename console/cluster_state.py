"""What the console's pages show, built from the admin client's answers with no Ray: brokers with
their partition and leader counts, topics and their partitions, consumer groups with their lag.

Every view is a frozen dataclass made by a plain function from answers already fetched (see
``reader``), so the rules (what is under-replicated, offline, led by its preferred replica, how
much a group lags) are tested with made-up answers. A value the cluster did not give (a size no
broker reported, a rate before two samples, an offset of a partition with no leader) is None, which
the pages show as "—".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rafka.clients.admin import ClusterDescription, TopicDescription
from rafka.groups.subscription_codec import decode_assignment
from rafka.protocol.configs import ConfigEntry, ConfigSource
from rafka.protocol.messages.groups import GroupDescription
from rafka.protocol.messages.metadata import PartitionMetadata
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

ReplicaSizes = Mapping[tuple[TopicPartition, int], int]
"""Bytes of each (partition, broker) replica's log, as the brokers' log directories report."""


@dataclass(frozen=True)
class Throughput:
    """Rates per second over the last sampling interval; None where no metric was reported."""

    messages_in: float | None = None
    bytes_in: float | None = None
    bytes_out: float | None = None


NO_THROUGHPUT = Throughput()


@dataclass(frozen=True)
class BrokerRow:
    """A broker: live ones as registered, and any broker a replica list names that is not live."""

    broker_id: int
    host: str | None
    port: int | None
    rack: str | None
    online: bool
    partitions: int
    leaders: int
    controller: bool
    throughput: Throughput = NO_THROUGHPUT

    @property
    def state(self) -> str:
        """``online`` or ``offline``."""
        return "online" if self.online else "offline"


@dataclass(frozen=True)
class PartitionRow:
    """One partition: its leadership, replicas and ISR, offsets and size."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    log_start: int | None = None
    log_end: int | None = None
    size: int | None = None

    @property
    def preferred_leader(self) -> int:
        """The first replica, which leads when all is well (-1 without replicas)."""
        return self.replicas[0] if self.replicas else -1

    @property
    def preferred(self) -> bool:
        """Whether the preferred replica leads."""
        return self.leader >= 0 and self.leader == self.preferred_leader

    @property
    def offline(self) -> bool:
        """Whether no live replica leads the partition."""
        return self.leader < 0

    @property
    def under_replicated(self) -> bool:
        """Whether some replica is out of the ISR."""
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True)
class TopicRow:
    """A topic as the topic list shows it."""

    name: str
    internal: bool
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int
    preferred: int
    size: int | None
    throughput: Throughput = NO_THROUGHPUT


@dataclass(frozen=True)
class ClusterView:
    """The cluster page: its brokers, controller, topics and the partitions in trouble."""

    cluster_id: str | None
    controller_id: int
    controller_epoch: int | None
    brokers: tuple[BrokerRow, ...]
    topics: tuple[TopicRow, ...]
    under_replicated: tuple[PartitionRow, ...]
    offline: tuple[PartitionRow, ...]

    @property
    def partition_count(self) -> int:
        """Partitions of every topic."""
        return sum(t.partitions for t in self.topics)


@dataclass(frozen=True)
class ConfigRow:
    """One config of a topic: its effective value and where it comes from."""

    name: str
    value: str | None
    source: str
    overridden: bool


@dataclass(frozen=True)
class TopicView:
    """The topic page: the topic's row, every partition and every config."""

    row: TopicRow
    partitions: tuple[PartitionRow, ...]
    configs: tuple[ConfigRow, ...]


@dataclass(frozen=True)
class MemberRow:
    """A group member and the partitions assigned to it."""

    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class LagRow:
    """A partition a group owns or has committed: its committed offset, log end and owner."""

    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    owner: str | None

    @property
    def lag(self) -> int | None:
        """Log end minus committed offset (as kafka-consumer-groups), None if either is
        unknown."""
        if self.committed is None or self.log_end is None:
            return None
        return self.log_end - self.committed


@dataclass(frozen=True)
class GroupView:
    """A consumer group: state, assignor, generation, members and lag per partition."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    generation: int
    members: tuple[MemberRow, ...]
    partitions: tuple[LagRow, ...]

    @property
    def total_lag(self) -> int | None:
        """The lag summed over the partitions whose lag is known; None if none is."""
        known = [row.lag for row in self.partitions if row.lag is not None]
        return sum(known) if known else None


def partition_size(topic: str, metadata: PartitionMetadata, sizes: ReplicaSizes) -> int | None:
    """The partition's size: its leader's log, else its largest replica's (None if no broker
    reported one)."""
    tp = TopicPartition(topic, metadata.partition)
    if (tp, metadata.leader) in sizes:
        return sizes[tp, metadata.leader]
    found = [sizes[tp, b] for b in metadata.replicas if (tp, b) in sizes]
    return max(found) if found else None


def partition_rows(
    description: TopicDescription,
    sizes: ReplicaSizes,
    starts: Mapping[TopicPartition, int] | None = None,
    ends: Mapping[TopicPartition, int] | None = None,
) -> tuple[PartitionRow, ...]:
    """The topic's partitions in order, with the log start and end offsets given."""
    starts, ends = starts or {}, ends or {}
    rows = []
    for p in sorted(description.partitions, key=lambda p: p.partition):
        tp = TopicPartition(description.name, p.partition)
        rows.append(
            PartitionRow(
                description.name,
                p.partition,
                p.leader,
                tuple(p.replicas),
                tuple(p.isr),
                tuple(p.offline_replicas),
                starts.get(tp),
                ends.get(tp),
                partition_size(description.name, p, sizes),
            )
        )
    return tuple(rows)


def topic_row(
    description: TopicDescription,
    sizes: ReplicaSizes,
    throughput: Throughput = NO_THROUGHPUT,
) -> TopicRow:
    """The topic list's row of a topic."""
    rows = partition_rows(description, sizes)
    known = [r.size for r in rows if r.size is not None]
    return TopicRow(
        description.name,
        description.is_internal,
        len(rows),
        max((len(r.replicas) for r in rows), default=0),
        sum(r.under_replicated for r in rows),
        sum(r.offline for r in rows),
        sum(r.preferred for r in rows),
        sum(known) if known else None,
        throughput,
    )


def broker_rows(
    cluster: ClusterDescription,
    topics: Sequence[TopicDescription],
    throughput: Mapping[int, Throughput],
) -> tuple[BrokerRow, ...]:
    """Every live broker, and every broker a replica list names that is not live, by id."""
    hosted: dict[int, int] = {}
    led: dict[int, int] = {}
    for topic in topics:
        for p in topic.partitions:
            for replica in p.replicas:
                hosted[replica] = hosted.get(replica, 0) + 1
            if p.leader >= 0:
                led[p.leader] = led.get(p.leader, 0) + 1
    rows = {}
    for broker in cluster.brokers:
        listener = broker.listener()
        rows[broker.broker_id] = BrokerRow(
            broker.broker_id,
            broker.host,
            listener[1] if listener else None,
            broker.rack,
            True,
            hosted.get(broker.broker_id, 0),
            led.get(broker.broker_id, 0),
            broker.broker_id == cluster.controller_id,
            throughput.get(broker.broker_id, NO_THROUGHPUT),
        )
    for missing in set(hosted) - set(rows):
        rows[missing] = BrokerRow(
            missing, None, None, None, False, hosted[missing], led.get(missing, 0), False
        )
    return tuple(rows[b] for b in sorted(rows))


def cluster_view(
    cluster: ClusterDescription,
    topics: Sequence[TopicDescription],
    controller_epoch: int | None,
    sizes: ReplicaSizes,
    broker_throughput: Mapping[int, Throughput],
    topic_throughput: Mapping[str, Throughput],
) -> ClusterView:
    """The cluster page from the cluster's description and every topic's."""
    ordered = sorted(topics, key=lambda t: t.name)
    partitions = [row for t in ordered for row in partition_rows(t, sizes)]
    return ClusterView(
        cluster.cluster_id,
        cluster.controller_id,
        controller_epoch,
        broker_rows(cluster, ordered, broker_throughput),
        tuple(topic_row(t, sizes, topic_throughput.get(t.name, NO_THROUGHPUT)) for t in ordered),
        tuple(r for r in partitions if r.under_replicated and not r.offline),
        tuple(r for r in partitions if r.offline),
    )


def config_rows(entries: Sequence[ConfigEntry]) -> tuple[ConfigRow, ...]:
    """A topic's configs by name; an override of the topic's own is marked."""
    return tuple(
        ConfigRow(
            e.name,
            e.value,
            e.source.name,
            e.source is ConfigSource.TOPIC_CONFIG,
        )
        for e in sorted(entries, key=lambda e: e.name)
    )


def topic_view(
    description: TopicDescription,
    configs: Sequence[ConfigEntry],
    sizes: ReplicaSizes,
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    throughput: Throughput = NO_THROUGHPUT,
) -> TopicView:
    """The topic page from the topic's description, configs and offsets."""
    return TopicView(
        topic_row(description, sizes, throughput),
        partition_rows(description, sizes, starts, ends),
        config_rows(configs),
    )


def group_view(
    description: GroupDescription,
    committed: Mapping[TopicPartition, OffsetAndMetadata],
    log_end: Mapping[TopicPartition, int],
) -> GroupView:
    """A group from its description, committed offsets and the log end offsets of its
    partitions: one lag row per partition a member owns or the group committed."""
    members = tuple(
        MemberRow(
            m.member_id,
            m.client_id,
            m.client_host,
            tuple(sorted(TopicPartition(*tp) for tp in decode_assignment(m.assignment))),
        )
        for m in sorted(description.members, key=lambda m: m.member_id)
    )
    owners = {tp: m.member_id for m in members for tp in m.assignment}
    rows = tuple(
        LagRow(
            tp.topic,
            tp.partition,
            committed[tp].offset if tp in committed else None,
            log_end.get(tp),
            owners.get(tp),
        )
        for tp in sorted(set(owners) | set(committed))
    )
    return GroupView(
        description.group_id,
        description.state,
        description.protocol_type,
        description.protocol,
        description.generation_id,
        members,
        rows,
    )
