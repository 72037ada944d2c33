"""A broker's families derived from what its replicas and its group coordinator report.

Kafka's ReplicaManager gauges (partition and leader counts, under-replicated and under-min-ISR
partitions) count over the broker's replicas, so each replica reports a ``ReplicaStatus`` beside its
families and the broker counts here. Consumer lag joins two owners' knowledge: the coordinator knows
each group's committed offsets, the partition leaders know the high watermarks; lag is their
difference, as ``kafka-consumer-groups --describe`` computes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rafka.metrics import catalog
from rafka.metrics.registry import MetricFamily, family, merge
from rafka.protocol.types import TopicPartition


@dataclass(frozen=True)
class ReplicaStatus:
    """What a partition replica is, for the broker's counts."""

    topic: str
    partition: int
    leader: bool
    replicas: int
    isr: int
    min_insync_replicas: int
    high_watermark: int

    @property
    def under_replicated(self) -> bool:
        """A leader whose ISR lacks some of its replicas."""
        return self.leader and self.isr < self.replicas

    @property
    def under_min_isr(self) -> bool:
        """A leader whose ISR is smaller than min.insync.replicas (acks=all is refused)."""
        return self.leader and self.isr < self.min_insync_replicas


@dataclass(frozen=True)
class ReplicaReport:
    """A replica's answer to the broker's metrics request."""

    status: ReplicaStatus
    families: tuple[MetricFamily, ...]


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed offset for one partition, as its coordinator holds it."""

    group: str
    partition: TopicPartition
    offset: int


@dataclass(frozen=True)
class CoordinatorReport:
    """A group coordinator's answer to the broker's metrics request."""

    families: tuple[MetricFamily, ...]
    committed: tuple[CommittedOffset, ...]


def replica_counts(broker_id: int, statuses: Iterable[ReplicaStatus]) -> list[MetricFamily]:
    """PartitionCount, LeaderCount, UnderReplicatedPartitions and UnderMinIsrPartitionCount."""
    listed = list(statuses)
    labels = {"broker": broker_id}

    def count(spec: catalog.MetricSpec, value: int) -> MetricFamily:
        return family(spec, [(labels, float(value))])

    return [
        count(catalog.PARTITION_COUNT, len(listed)),
        count(catalog.LEADER_COUNT, sum(status.leader for status in listed)),
        count(catalog.UNDER_REPLICATED, sum(status.under_replicated for status in listed)),
        count(catalog.UNDER_MIN_ISR, sum(status.under_min_isr for status in listed)),
    ]


def consumer_lag(
    broker_id: int,
    committed: Iterable[CommittedOffset],
    high_watermarks: Mapping[TopicPartition, int],
) -> list[MetricFamily]:
    """Each group's committed offset and lag per partition; a partition whose high watermark is
    not known (no live leader answered) has its offset reported and its lag left out."""
    offsets = []
    lags = []
    for entry in committed:
        labels = {
            "broker": broker_id,
            "group": entry.group,
            "topic": entry.partition.topic,
            "partition": entry.partition.partition,
        }
        offsets.append((labels, float(entry.offset)))
        high_watermark = high_watermarks.get(entry.partition)
        if high_watermark is not None:
            lags.append((labels, float(max(0, high_watermark - entry.offset))))
    return [
        family(catalog.CONSUMER_GROUP_OFFSET, offsets),
        family(catalog.CONSUMER_GROUP_LAG, lags),
    ]


def broker_families(
    broker_id: int,
    reports: Iterable[ReplicaReport],
    others: Iterable[Iterable[MetricFamily]] = (),
) -> list[MetricFamily]:
    """The broker's whole snapshot: its replicas' families summed per topic and request type,
    the counts over their statuses, and the families of its other processes."""
    listed = list(reports)
    return merge(
        [
            *(report.families for report in listed),
            replica_counts(broker_id, (report.status for report in listed)),
            *others,
        ]
    )


def leader_high_watermarks(reports: Iterable[ReplicaReport]) -> dict[TopicPartition, int]:
    """The high watermark of every partition led among ``reports``."""
    return {
        TopicPartition(report.status.topic, report.status.partition): report.status.high_watermark
        for report in reports
        if report.status.leader
    }
