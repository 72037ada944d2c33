"""Tests for rafka.actors.replica.replica_metrics: what a replica counts and reports."""

from __future__ import annotations

from rafka.actors.replica.partition import Partition
from rafka.actors.replica.replica_metrics import ReplicaMetrics
from rafka.metrics.registry import select, total
from rafka.protocol.errors import Errors
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import FetchRequest, FetchResponse
from rafka.protocol.messages.produce import ACKS_LEADER
from rafka.protocol.records.builder import build_batch


def leader(open_log, clock) -> Partition:
    partition = Partition("t", 0, 0, open_log(), clock)
    partition.make_leader(LeaderAndIsrPartitionState("t", 0, 1, 0, 1, (0, 1), 0, (0, 1, 2)))
    return partition


def test_appends_count_records_and_bytes_for_the_topic(open_log, clock) -> None:
    partition = leader(open_log, clock)
    metrics = ReplicaMetrics(partition, {"Produce": [], "Fetch": [1]})
    info = partition.append_as_leader(
        build_batch([(None, b"v", 1), (None, b"w", 2)]), ACKS_LEADER, 1
    )
    metrics.appended(info.record_count, info.size_in_bytes)
    report = metrics.report(min_insync_replicas=2)
    assert total(report.families, "rafka_messages_in_total", topic="t") == 2
    assert total(report.families, "rafka_bytes_in_total") == info.size_in_bytes
    assert total(report.families, "rafka_log_end_offset", partition=0) == 2
    assert total(report.families, "rafka_purgatory_size", delayed_operation="Fetch") == 1
    assert report.status.leader and report.status.under_replicated
    assert not report.status.under_min_isr


def test_native_fetches_are_timed_by_kind_and_listener_fetches_are_not(open_log, clock) -> None:
    metrics = ReplicaMetrics(leader(open_log, clock), {})
    answer = FetchResponse(Errors.NONE, records=b"x" * 10)
    metrics.fetch_answered(FetchRequest(0), answer, 1.0)
    metrics.fetch_answered(FetchRequest(0, replica_id=1), answer, 2.0)
    metrics.fetch_answered(FetchRequest(0, file_regions=True), answer, 3.0)
    metrics.fetch_answered(FetchRequest(0), FetchResponse(Errors.OFFSET_OUT_OF_RANGE), 1.0)
    families = metrics.report(1).families
    assert total(families, "rafka_bytes_out_total") == 20
    assert total(families, "rafka_replication_bytes_out_total") == 10
    assert total(families, "rafka_requests_total", request="FetchConsumer") == 2
    assert total(families, "rafka_requests_total", request="FetchFollower") == 1
    assert total(families, "rafka_failed_fetch_requests_total") == 1
    assert total(families, "rafka_total_fetch_requests_total") == 3


def test_failed_produce_and_isr_changes_are_counted(open_log, clock) -> None:
    metrics = ReplicaMetrics(leader(open_log, clock), {})
    metrics.produce_answered(Errors.NONE, 1.0)
    metrics.produce_answered(Errors.NOT_ENOUGH_REPLICAS, 1.0)
    metrics.isr_changed(3, 2)
    metrics.isr_changed(2, 3)
    metrics.isr_changed(3, 3)
    families = metrics.report(1).families
    assert total(families, "rafka_total_produce_requests_total") == 2
    assert total(families, "rafka_failed_produce_requests_total") == 1
    assert total(families, "rafka_isr_shrinks_total") == 1
    assert total(families, "rafka_isr_expands_total") == 1
    (produce,) = [h for f in families for h in f.histograms if ("request", "Produce") in h.labels]
    assert produce.count == 2
    assert select(families, "rafka_high_watermark")[0].value == 0
