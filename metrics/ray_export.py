"""Mirror metric families into Ray's metrics system (``ray.util.metrics``).

Ray exports what a process records at its node's Prometheus endpoint (names gain Ray's ``ray_``
prefix) and shows it in Ray's dashboard. rafka records into its own cheap instruments on the hot
path and hands their snapshots to ``RayExporter.export`` every few seconds, which adds each
counter's growth since the last export, sets each gauge, and replays each histogram bucket's new
observations at the bucket's upper bound (so Ray's bucket counts are exact; its sums are bounds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ray.util import metrics as ray_metrics

from rafka.metrics.registry import Labels, MetricFamily, MetricKind, MetricSpec


def _bucket_values(bounds: tuple[float, ...]) -> tuple[float, ...]:
    # Observations above the last bound are replayed just above it, so they land in +Inf.
    return (*bounds, math.nextafter(bounds[-1], math.inf) if bounds else 0.0)


class RayExporter:
    """Keeps one Ray metric per rafka metric and what it last exported of each sample."""

    def __init__(self) -> None:
        self._metrics: dict[str, Any] = {}
        self._counters: dict[tuple[str, Labels], float] = {}
        self._buckets: dict[tuple[str, Labels], tuple[int, ...]] = {}

    def _metric(self, spec: MetricSpec) -> Any:
        found = self._metrics.get(spec.name)
        if found is None:
            if spec.kind is MetricKind.COUNTER:
                found = ray_metrics.Counter(spec.name, spec.help, tag_keys=spec.labels)
            elif spec.kind is MetricKind.GAUGE:
                found = ray_metrics.Gauge(spec.name, spec.help, tag_keys=spec.labels)
            else:
                found = ray_metrics.Histogram(
                    spec.name, spec.help, boundaries=list(spec.buckets), tag_keys=spec.labels
                )
            self._metrics[spec.name] = found
        return found

    def export(self, families: Iterable[MetricFamily]) -> None:
        """Record the change since the previous export of every sample in ``families``."""
        for item in families:
            metric = self._metric(item.spec)
            for sample in item.samples:
                tags = dict(sample.labels)
                if item.spec.kind is MetricKind.GAUGE:
                    metric.set(sample.value, tags=tags)
                    continue
                key = (item.name, sample.labels)
                previous = self._counters.get(key, 0.0)
                # A smaller value means the process behind it restarted from zero.
                grown = sample.value - previous if sample.value >= previous else sample.value
                if grown > 0:
                    metric.inc(grown, tags=tags)
                self._counters[key] = sample.value
            for histogram in item.histograms:
                key = (item.name, histogram.labels)
                before = self._buckets.get(key, (0,) * len(histogram.counts))
                if any(now < then for now, then in zip(histogram.counts, before, strict=True)):
                    before = (0,) * len(histogram.counts)
                tags = dict(histogram.labels)
                values = _bucket_values(histogram.bounds)
                for value, now, then in zip(values, histogram.counts, before, strict=True):
                    for _ in range(now - then):
                        metric.observe(value, tags=tags)
                self._buckets[key] = histogram.counts
