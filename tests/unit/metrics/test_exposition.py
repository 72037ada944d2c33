"""Tests for rafka.metrics.exposition: Prometheus' text format."""

from __future__ import annotations

from rafka.metrics import catalog
from rafka.metrics.exposition import render
from rafka.metrics.registry import MetricFamily, MetricsRegistry, Sample


def test_counter_renders_help_type_and_labelled_sample() -> None:
    registry = MetricsRegistry()
    registry.counter(catalog.MESSAGES_IN, broker=2, topic="orders").inc(12)
    lines = render(registry.collect()).splitlines()
    assert lines == [
        "# HELP rafka_messages_in_total Records appended by leaders.",
        "# TYPE rafka_messages_in_total counter",
        'rafka_messages_in_total{broker="2",topic="orders"} 12',
    ]


def test_histogram_renders_cumulative_buckets_sum_and_count() -> None:
    registry = MetricsRegistry()
    histogram = registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=0, request="Fetch")
    for value in (0.2, 1.5, 1.5, 50_000.0):
        histogram.observe(value)
    text = render(registry.collect())
    assert 'rafka_request_total_time_ms_bucket{broker="0",request="Fetch",le="0.5"} 1' in text
    assert 'rafka_request_total_time_ms_bucket{broker="0",request="Fetch",le="2"} 3' in text
    assert 'rafka_request_total_time_ms_bucket{broker="0",request="Fetch",le="30000"} 3' in text
    assert 'rafka_request_total_time_ms_bucket{broker="0",request="Fetch",le="+Inf"} 4' in text
    assert 'rafka_request_total_time_ms_count{broker="0",request="Fetch"} 4' in text
    assert 'rafka_request_total_time_ms_sum{broker="0",request="Fetch"} 50003.2' in text


def test_label_values_are_escaped() -> None:
    family = MetricFamily(
        catalog.CONSUMER_GROUP_LAG,
        (Sample((("broker", "0"), ("group", 'a"b\\c\nd'), ("topic", "t"), ("partition", "0")), 1),),
    )
    assert 'group="a\\"b\\\\c\\nd"' in render([family])
