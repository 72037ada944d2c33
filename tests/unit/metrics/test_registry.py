"""Tests for rafka.metrics.registry: instruments, snapshots, merging and quantiles."""

from __future__ import annotations

import pytest

from rafka.metrics import catalog
from rafka.metrics.registry import (
    HistogramSample,
    MetricsRegistry,
    merge,
    select,
    total,
)


def test_counter_for_the_same_labels_is_one_instrument() -> None:
    registry = MetricsRegistry()
    registry.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(3)
    registry.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(4)
    registry.counter(catalog.MESSAGES_IN, broker=0, topic="u").inc()
    families = registry.collect()
    assert total(families, "rafka_messages_in_total", topic="t") == 7
    assert total(families, "rafka_messages_in_total") == 8


def test_labels_must_be_exactly_the_declared_ones() -> None:
    registry = MetricsRegistry()
    with pytest.raises(ValueError, match="takes labels"):
        registry.counter(catalog.MESSAGES_IN, broker=0)
    with pytest.raises(TypeError, match="is a counter"):
        registry.gauge(catalog.MESSAGES_IN, broker=0, topic="t")


def test_computed_values_are_read_when_the_snapshot_is_taken() -> None:
    registry = MetricsRegistry()
    queue: list[int] = []
    registry.computed(catalog.PURGATORY_SIZE, queue.__len__, broker=1, delayed_operation="Fetch")
    queue.extend([1, 2])
    assert total(registry.collect(), "rafka_purgatory_size", delayed_operation="Fetch") == 2
    with pytest.raises(TypeError, match="histogram"):
        registry.computed(catalog.REQUEST_TOTAL_TIME, lambda: 1.0, broker=1, request="Produce")


def test_disabled_registry_records_nothing() -> None:
    registry = MetricsRegistry(enabled=False)
    registry.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(5)
    registry.gauge(catalog.LEADER_COUNT, broker=0).set(2)
    registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=0, request="Produce").observe(1)
    registry.computed(catalog.LEADER_COUNT, lambda: 9, broker=0)
    assert registry.collect() == []


def test_remove_forgets_a_partitions_instruments_only() -> None:
    registry = MetricsRegistry()
    registry.computed(catalog.LOG_SIZE, lambda: 10, broker=0, topic="t", partition=0)
    registry.computed(catalog.LOG_SIZE, lambda: 20, broker=0, topic="t", partition=1)
    registry.remove(topic="t", partition=0)
    assert [s.value for s in select(registry.collect(), "rafka_log_size")] == [20]


def test_histogram_counts_into_buckets_by_upper_bound() -> None:
    registry = MetricsRegistry()
    histogram = registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=0, request="Produce")
    for value in (0.5, 0.7, 3.0, 99_999.0):
        histogram.observe(value)
    (sample,) = next(f for f in registry.collect() if f.histograms).histograms
    assert sample.counts[0] == 1  # 0.5 is at most the first bound
    assert sample.counts[1] == 1
    assert sample.counts[3] == 1  # 3.0 is in (2, 5]
    assert sample.counts[-1] == 1  # above every bound
    assert sample.count == 4 and sample.sum == pytest.approx(100_003.2)


def test_quantile_interpolates_inside_the_bucket() -> None:
    sample = HistogramSample((), (10.0, 20.0), (0, 4, 0), 60.0)
    assert sample.quantile(0.5) == pytest.approx(15.0)
    assert sample.quantile(1.0) == pytest.approx(20.0)
    assert HistogramSample((), (10.0,), (0, 0), 0.0).quantile(0.99) == 0.0


def test_merge_sums_samples_with_equal_labels_and_keeps_others_apart() -> None:
    one, two = MetricsRegistry(), MetricsRegistry()
    one.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(2)
    two.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(3)
    two.counter(catalog.MESSAGES_IN, broker=1, topic="t").inc(7)
    for registry in (one, two):
        registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=0, request="Produce").observe(1)
    merged = merge([one.collect(), two.collect()])
    assert [f.name for f in merged] == ["rafka_messages_in_total", "rafka_request_total_time_ms"]
    assert total(merged, "rafka_messages_in_total", broker=0) == 5
    assert total(merged, "rafka_messages_in_total", broker=1) == 7
    (histogram,) = merged[1].histograms
    assert histogram.count == 2 and histogram.sum == 2


def test_catalog_declares_each_name_once_with_rafka_prefix() -> None:
    names = [spec.name for spec in catalog.ALL]
    assert len(names) == len(set(names))
    assert all(name.startswith("rafka_") for name in names)
    counters = [s for s in catalog.ALL if s.kind is catalog.COUNTER]
    assert all(spec.name.endswith("_total") for spec in counters)
