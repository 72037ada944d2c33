"""Tests for rafka.metrics.ray_export, with Ray's metric classes faked at the boundary."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from rafka.metrics import catalog, ray_export
from rafka.metrics.ray_export import RayExporter
from rafka.metrics.registry import MetricsRegistry


class FakeMetric:
    """Records every call Ray's Counter, Gauge or Histogram would get."""

    made: ClassVar[list[FakeMetric]] = []

    def __init__(self, name: str, description: str = "", **options: Any) -> None:
        self.name = name
        self.options = options
        self.calls: list[tuple[str, float, dict[str, str]]] = []
        FakeMetric.made.append(self)

    def inc(self, value: float, tags: dict[str, str]) -> None:
        self.calls.append(("inc", value, tags))

    def set(self, value: float, tags: dict[str, str]) -> None:
        self.calls.append(("set", value, tags))

    def observe(self, value: float, tags: dict[str, str]) -> None:
        self.calls.append(("observe", value, tags))


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> list[FakeMetric]:
    FakeMetric.made = []
    for kind in ("Counter", "Gauge", "Histogram"):
        monkeypatch.setattr(ray_export.ray_metrics, kind, FakeMetric)
    return FakeMetric.made


def test_counters_are_exported_as_their_growth_since_the_last_export(fake_ray) -> None:
    registry = MetricsRegistry()
    counter = registry.counter(catalog.MESSAGES_IN, broker=0, topic="t")
    exporter = RayExporter()
    counter.inc(5)
    exporter.export(registry.collect())
    exporter.export(registry.collect())  # no growth: nothing recorded
    counter.inc(2)
    exporter.export(registry.collect())
    (metric,) = fake_ray
    assert metric.options["tag_keys"] == ("broker", "topic")
    assert [call[:2] for call in metric.calls] == [("inc", 5), ("inc", 2)]
    assert metric.calls[0][2] == {"broker": "0", "topic": "t"}


def test_a_counter_that_went_back_is_a_restarted_process_counting_from_zero(fake_ray) -> None:
    exporter = RayExporter()
    first, second = MetricsRegistry(), MetricsRegistry()
    first.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(10)
    second.counter(catalog.MESSAGES_IN, broker=0, topic="t").inc(3)
    exporter.export(first.collect())
    exporter.export(second.collect())
    assert [call[1] for call in fake_ray[0].calls] == [10, 3]


def test_histogram_buckets_are_replayed_at_their_bounds(fake_ray) -> None:
    registry = MetricsRegistry()
    histogram = registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=0, request="Produce")
    exporter = RayExporter()
    histogram.observe(0.3)
    histogram.observe(4.0)
    exporter.export(registry.collect())
    histogram.observe(40_000.0)
    exporter.export(registry.collect())
    values = [call[1] for call in fake_ray[0].calls]
    assert values[:2] == [0.5, 5.0]
    assert len(values) == 3 and values[2] > catalog.REQUEST_TIME_BUCKETS_MS[-1]


def test_gauges_are_set(fake_ray) -> None:
    registry = MetricsRegistry()
    registry.gauge(catalog.LEADER_COUNT, broker=3).set(4)
    RayExporter().export(registry.collect())
    assert fake_ray[0].calls == [("set", 4, {"broker": "3"})]
