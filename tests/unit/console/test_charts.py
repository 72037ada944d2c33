"""What the console samples and charts (rafka.console.charts): throughput
per broker and topic from the brokers' counters, latency percentiles of each interval alone, lag,
and the charts' JSON, with no metrics at all too."""

from __future__ import annotations

from rafka.console.charts import (
    CHARTS,
    Sampler,
    broker_throughput,
    interval_latencies,
    request_histograms,
    throughput_totals,
    topic_throughput,
)
from rafka.console.cluster_state import group_view
from rafka.console.history import History
from rafka.metrics import catalog
from rafka.metrics.registry import MetricFamily, MetricsRegistry, merge
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import GroupDescription
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

from .conftest import member


def broker_families(
    broker: int, messages: dict[str, float], produce_ms: list[float]
) -> list[MetricFamily]:
    """One broker's families: messages and bytes (10 per message) in per topic, Produce times."""
    registry = MetricsRegistry()
    for topic, count in messages.items():
        registry.counter(catalog.MESSAGES_IN, broker=broker, topic=topic).inc(count)
        registry.counter(catalog.BYTES_IN, broker=broker, topic=topic).inc(count * 10)
    histogram = registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=broker, request="Produce")
    for value in produce_ms:
        histogram.observe(value)
    return registry.collect()


def test_throughput_totals_are_summed_per_broker_and_per_topic() -> None:
    families = merge([broker_families(0, {"a": 5, "b": 1}, []), broker_families(1, {"a": 2}, [])])
    totals = throughput_totals(families)
    assert totals["messages_in", "broker", "0"] == 6
    assert totals["messages_in", "broker", "1"] == 2
    assert totals["messages_in", "topic", "a"] == 7
    assert totals["bytes_in", "topic", "b"] == 10
    assert ("bytes_out", "topic", "a") not in totals


def test_rates_come_from_two_samples_and_are_missing_without_metrics() -> None:
    history = History()
    assert broker_throughput(history) == {} and topic_throughput(history) == {}
    history.record(0.0, throughput_totals(broker_families(0, {"a": 10}, [])))
    history.record(2.0, throughput_totals(broker_families(0, {"a": 30}, [])))
    rates = topic_throughput(history)["a"]
    assert (rates.messages_in, rates.bytes_in, rates.bytes_out) == (10.0, 100.0, None)
    assert broker_throughput(history)[0].messages_in == 10.0


def test_latency_percentiles_are_those_of_the_requests_between_two_samples() -> None:
    slow_start = request_histograms(broker_families(0, {}, [900.0] * 100))
    later = request_histograms(broker_families(0, {}, [900.0] * 100 + [3.0] * 50))
    assert interval_latencies({}, slow_start) == {}
    interval = interval_latencies(slow_start, later)
    # Only the 50 requests of 3 ms happened in between: the 900 ms ones are history.
    assert 2.0 < interval["latency", "Produce", "p50"] <= 5.0
    assert interval["latency", "Produce", "p99"] <= 5.0
    assert interval_latencies(later, later) == {}


def test_histograms_of_every_broker_are_added_per_request_type() -> None:
    merged = request_histograms(
        merge([broker_families(0, {}, [1.0]), broker_families(1, {}, [1.0, 1.0])])
    )
    assert merged["Produce"].count == 3


def test_a_sample_records_throughput_latency_and_lag() -> None:
    description = GroupDescription(
        Errors.NONE, "app", "Stable", "consumer", "range", 1, (member("m", [("a", 0)]),)
    )
    lagging = group_view(
        description,
        {TopicPartition("a", 0): OffsetAndMetadata(4, "")},
        {TopicPartition("a", 0): 10},
    )
    sampler = Sampler()
    first = sampler.values(broker_families(0, {"a": 1}, [2.0]), [lagging])
    second = sampler.values(broker_families(0, {"a": 2}, [2.0, 7.0]), [lagging])
    assert first["lag", "app"] == 6 and first["lag", "app", "a", "0"] == 6
    assert not any(key[0] == "latency" for key in first)
    assert 5.0 < second["latency", "Produce", "p50"] <= 10.0
    assert second["messages_in", "topic", "a"] == 2


def test_charts_draw_rates_latency_and_lag_and_nothing_without_samples() -> None:
    empty = History()
    for name, build in CHARTS.items():
        assert build(empty, {}).to_json()["series"] == [], name
    history = History()
    history.record(
        1.0,
        {
            ("messages_in", "topic", "a"): 0.0,
            ("messages_in", "topic", "b"): 0.0,
            ("lag", "g"): 3.0,
            ("lag", "g", "a", "0"): 3.0,
        },
    )
    history.record(
        2.0,
        {
            ("messages_in", "topic", "a"): 5.0,
            ("messages_in", "topic", "b"): 1.0,
            ("lag", "g"): 1.0,
            ("lag", "g", "a", "0"): 1.0,
        },
    )
    messages = CHARTS["topic-messages"](history, {"topic": "a"}).to_json()
    assert messages["unit"] == "msg/s"
    assert messages["series"] == [{"name": "topic a", "points": [[2000, 5.0]]}]
    assert len(CHARTS["topic-messages"](history, {}).to_json()["series"]) == 2
    assert CHARTS["lag"](history, {}).to_json()["series"] == [
        {"name": "g", "points": [[1000, 3.0], [2000, 1.0]]}
    ]
    per_partition = CHARTS["lag"](history, {"group": "g"}).to_json()
    assert [s["name"] for s in per_partition["series"]] == ["a-0"]
