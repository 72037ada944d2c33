"""The console's charts: what it samples every refresh, and which series each chart draws.

Every refresh the console samples the brokers' throughput counters, request latency percentiles
and every consumer group's lag into its history. Throughput comes from the brokers' metric families
(``rafka_messages_in_total``, ``rafka_bytes_in_total``, ``rafka_bytes_out_total``), summed per
broker and per topic; the history turns the running totals into rates, which the tables show too.
Latency percentiles are those of the requests of the last interval alone: the request-time
histograms count since each broker started, so a sample's buckets minus the previous sample's are
the interval's. Lag is read through the admin client (committed offsets against log end offsets,
as the group page shows it), so it is charted even while the brokers report no metrics.

The pages hold an empty figure naming a chart (``/api/charts/<name>``, with ``topic`` or ``group``
to narrow it); the page's script fetches its JSON every refresh and draws the lines. A chart with
no series yet (no metrics reported, a single sample) comes back with none, which the page shows as
"—".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rafka.console.cluster_state import GroupView, Throughput
from rafka.console.history import History, Point, SeriesKey
from rafka.metrics import catalog
from rafka.metrics.registry import HistogramSample, MetricFamily, select

MESSAGES_IN = "messages_in"
BYTES_IN = "bytes_in"
BYTES_OUT = "bytes_out"
LATENCY = "latency"
LAG = "lag"

THROUGHPUT_METRICS = {
    MESSAGES_IN: catalog.MESSAGES_IN.name,
    BYTES_IN: catalog.BYTES_IN.name,
    BYTES_OUT: catalog.BYTES_OUT.name,
}
"""Each throughput quantity and the broker counter it is the rate of."""

QUANTILES = {"p50": 0.5, "p99": 0.99}
"""The request latency percentiles charted."""

Histograms = dict[str, HistogramSample]
"""Request-time histograms by request type, merged over the brokers."""


def throughput_totals(families: Iterable[MetricFamily]) -> dict[SeriesKey, float]:
    """The throughput counters' running totals per broker (``(quantity, "broker", id)``) and per
    topic (``(quantity, "topic", name)``)."""
    families = list(families)
    totals: dict[SeriesKey, float] = {}
    for quantity, metric in THROUGHPUT_METRICS.items():
        for sample in select(families, metric):
            labels = dict(sample.labels)
            for scope in ("broker", "topic"):
                if scope in labels:
                    key = (quantity, scope, labels[scope])
                    totals[key] = totals.get(key, 0.0) + sample.value
    return totals


def request_histograms(families: Iterable[MetricFamily]) -> Histograms:
    """The request-time histograms by request type, every broker's added together."""
    merged: Histograms = {}
    for item in families:
        if item.name != catalog.REQUEST_TOTAL_TIME.name:
            continue
        for histogram in item.histograms:
            request = dict(histogram.labels).get("request", "")
            seen = merged.get(request)
            merged[request] = histogram if seen is None else seen.plus(histogram)
    return merged


def interval_latencies(previous: Histograms, current: Histograms) -> dict[SeriesKey, float]:
    """Each request type's latency percentiles (``("latency", request, "p99")``) over the requests
    between two samples; a type with no request in between, or whose counts went down (a broker
    restarted), has none."""
    found: dict[SeriesKey, float] = {}
    for request, histogram in sorted(current.items()):
        before = previous.get(request)
        if before is None or before.bounds != histogram.bounds:
            continue
        interval = histogram.plus(before, -1)
        if interval.count <= 0 or min(interval.counts) < 0:
            continue
        for name, q in QUANTILES.items():
            found[LATENCY, request, name] = interval.quantile(q)
    return found


def lag_values(groups: Iterable[GroupView]) -> dict[SeriesKey, float]:
    """Each group's total lag (``("lag", group)``) and each partition's
    (``("lag", group, topic, partition)``), where known."""
    found: dict[SeriesKey, float] = {}
    for group in groups:
        total = group.total_lag
        if total is not None:
            found[LAG, group.group_id] = total
        for row in group.partitions:
            if row.lag is not None:
                found[LAG, group.group_id, row.topic, str(row.partition)] = row.lag
    return found


class Sampler:
    """Turns metric scrapes into series values; keeps the last scrape's histograms to take the
    next interval's latencies (one sample at a time)."""

    def __init__(self) -> None:
        self._histograms: Histograms = {}

    def values(
        self, families: Iterable[MetricFamily], groups: Iterable[GroupView]
    ) -> dict[SeriesKey, float]:
        """Everything one sample records: throughput totals, the interval's latencies, lag."""
        families = list(families)
        current = request_histograms(families)
        latencies = interval_latencies(self._histograms, current)
        self._histograms = current
        return {**throughput_totals(families), **latencies, **lag_values(groups)}


def _throughput(history: History, scope: str) -> dict[str, Throughput]:
    """The current rates of everything of ``scope`` ("broker", "topic") any broker reported."""
    names = {key[2] for quantity in THROUGHPUT_METRICS for key in history.keys(quantity, scope)}
    return {
        name: Throughput(
            *(history.rate((quantity, scope, name)) for quantity in THROUGHPUT_METRICS)
        )
        for name in names
    }


def broker_throughput(history: History) -> dict[int, Throughput]:
    """Each broker's current rates, for the brokers that reported any."""
    return {int(b): rates for b, rates in _throughput(history, "broker").items() if b.isdigit()}


def topic_throughput(history: History) -> dict[str, Throughput]:
    """Each topic's current rates, for the topics any broker reported."""
    return _throughput(history, "topic")


@dataclass(frozen=True)
class Series:
    """One line of a chart."""

    name: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class Chart:
    """A chart's title, the unit of its values and its lines."""

    title: str
    unit: str
    series: tuple[Series, ...]

    def to_json(self) -> dict[str, Any]:
        """The chart as the page's script reads it: points as ``[ms since epoch, value]``."""
        return {
            "title": self.title,
            "unit": self.unit,
            "series": [
                {"name": s.name, "points": [[round(p.at * 1000), p.value] for p in s.points]}
                for s in self.series
                if s.points
            ],
        }


Params = Mapping[str, str]
"""A chart request's query: ``topic`` or ``group`` to narrow it."""


def _rates(
    history: History, quantity: str, scope: str, only: str | None, label: str
) -> list[Series]:
    """The rate series of ``quantity`` for everything of ``scope``, or only ``only``."""
    return [
        Series(f"{scope} {key[2]}{label}", tuple(history.rates(key)))
        for key in history.keys(quantity, scope)
        if only is None or key[2] == only
    ]


def messages(scope: str) -> Callable[[History, Params], Chart]:
    """Messages in per second, per broker or per topic."""

    def build(history: History, params: Params) -> Chart:
        only = params.get(scope)
        series = _rates(history, MESSAGES_IN, scope, only, "")
        return Chart(f"Messages in per {scope}", "msg/s", tuple(series))

    return build


def traffic(scope: str) -> Callable[[History, Params], Chart]:
    """Bytes in and out per second, per broker or per topic."""

    def build(history: History, params: Params) -> Chart:
        only = params.get(scope)
        series = _rates(history, BYTES_IN, scope, only, " in")
        series += _rates(history, BYTES_OUT, scope, only, " out")
        return Chart(f"Bytes in and out per {scope}", "B/s", tuple(series))

    return build


def latency(history: History, params: Params) -> Chart:
    """Each request type's latency percentiles over each interval."""
    requests = sorted({key[1] for key in history.keys(LATENCY)})
    series = [
        Series(f"{request} {q}", tuple(history.points((LATENCY, request, q))))
        for request in requests
        for q in QUANTILES
    ]
    return Chart("Request latency", "ms", tuple(series))


def lag(history: History, params: Params) -> Chart:
    """Each group's total lag, or one group's lag per partition."""
    group = params.get("group")
    if group is None:
        keys: list[SeriesKey] = [k for k in history.keys(LAG) if len(k) == 2]
        return Chart(
            "Lag per group",
            "messages",
            tuple(Series(k[1], tuple(history.points(k))) for k in keys),
        )
    keys = [k for k in history.keys(LAG, group) if len(k) == 4]
    return Chart(
        f"Lag of {group} per partition",
        "messages",
        tuple(Series(f"{k[2]}-{k[3]}", tuple(history.points(k))) for k in keys),
    )


CHARTS: dict[str, Callable[[History, Params], Chart]] = {
    "broker-messages": messages("broker"),
    "broker-bytes": traffic("broker"),
    "topic-messages": messages("topic"),
    "topic-bytes": traffic("topic"),
    "latency": latency,
    "lag": lag,
}
"""Every chart by its name in ``/api/charts/<name>``."""
