"""Tests for rafka.metrics.broker_view: a broker's counts over its replicas, and consumer lag."""

from __future__ import annotations

from rafka.metrics import catalog
from rafka.metrics.broker_view import (
    CommittedOffset,
    ReplicaReport,
    ReplicaStatus,
    broker_families,
    consumer_lag,
    leader_high_watermarks,
    replica_counts,
)
from rafka.metrics.registry import MetricsRegistry, select, total
from rafka.protocol.types import TopicPartition


def status(partition: int, leader: bool, isr: int, replicas: int = 3, hw: int = 0) -> ReplicaStatus:
    return ReplicaStatus("t", partition, leader, replicas, isr, 2, hw)


def test_counts_leaders_under_replicated_and_under_min_isr() -> None:
    statuses = [
        status(0, leader=True, isr=3),
        status(1, leader=True, isr=2),  # under-replicated, not under min ISR
        status(2, leader=True, isr=1),  # both
        status(3, leader=False, isr=1),  # a follower's view never counts
    ]
    families = replica_counts(7, statuses)
    assert total(families, "rafka_partition_count", broker=7) == 4
    assert total(families, "rafka_leader_count") == 3
    assert total(families, "rafka_under_replicated_partitions") == 2
    assert total(families, "rafka_under_min_isr_partition_count") == 1


def test_lag_is_high_watermark_minus_committed_never_negative() -> None:
    tp0, tp1, tp2 = (TopicPartition("t", p) for p in range(3))
    committed = [
        CommittedOffset("g", tp0, 40),
        CommittedOffset("g", tp1, 90),  # past a HW read a moment earlier
        CommittedOffset("g", tp2, 5),  # no known HW
    ]
    families = consumer_lag(1, committed, {tp0: 100, tp1: 80})
    lags = {s.labels: s.value for s in select(families, "rafka_consumergroup_lag")}
    assert list(lags.values()) == [60, 0]
    assert total(families, "rafka_consumergroup_current_offset", partition=2) == 5


def test_broker_families_sum_a_topics_partitions_per_broker() -> None:
    reports = []
    for partition in range(3):
        registry = MetricsRegistry()
        registry.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(10)
        reports.append(
            ReplicaReport(status(partition, True, 3, hw=partition), tuple(registry.collect()))
        )
    families = broker_families(0, reports)
    (sample,) = select(families, "rafka_messages_in_total")
    assert sample.value == 30
    assert total(families, "rafka_leader_count") == 3
    assert leader_high_watermarks(reports) == {TopicPartition("t", p): p for p in range(3)}
