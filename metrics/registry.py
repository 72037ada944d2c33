"""Instruments a process updates on its hot path, and the snapshots it reports.

An instrument is a plain Python object: ``Counter.inc`` adds to an attribute, ``Histogram.observe``
bisects into a list of bucket counts, so recording costs well under a microsecond and takes no lock
(each actor handles one message at a time, and a lost increment between threads of one process
costs a count, never a record). ``MetricsRegistry.collect`` turns the instruments into frozen
``MetricFamily`` snapshots, which cross actor boundaries, merge across processes and render as
Prometheus text. A registry made with ``enabled=False`` hands out instruments that record nothing:
the benchmark's metrics-off runs.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

Labels = tuple[tuple[str, str], ...]
"""Label names and values, in the order the metric declares them."""


class MetricKind(enum.Enum):
    """Prometheus' metric types that rafka uses."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True)
class MetricSpec:
    """One metric, declared once in ``catalog``: its name, type, help text, label names, the Kafka
    MBean it stands for, and (histograms) its bucket upper bounds."""

    name: str
    kind: MetricKind
    help: str
    labels: tuple[str, ...]
    kafka_name: str = ""
    buckets: tuple[float, ...] = ()


@dataclass(frozen=True)
class Sample:
    """A counter's or gauge's value for one set of labels."""

    labels: Labels
    value: float


@dataclass(frozen=True)
class HistogramSample:
    """A histogram's bucket counts for one set of labels: ``counts[i]`` observations at most
    ``bounds[i]`` and above the bound before it; the last count is above every bound (+Inf)."""

    labels: Labels
    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    sum: float

    @property
    def count(self) -> int:
        """Observations in all buckets."""
        return sum(self.counts)

    def plus(self, other: HistogramSample, sign: int = 1) -> HistogramSample:
        """This histogram plus (or, with ``sign`` -1, minus) ``other``, bucket by bucket, under
        this one's labels."""
        counts = tuple(a + sign * b for a, b in zip(self.counts, other.counts, strict=True))
        return HistogramSample(self.labels, self.bounds, counts, self.sum + sign * other.sum)

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (0..1), interpolated inside its bucket as Prometheus'
        ``histogram_quantile`` does; 0.0 with no observations."""
        total = self.count
        if total == 0:
            return 0.0
        rank = q * total
        seen = 0
        for index, count in enumerate(self.counts):
            if seen + count >= rank and count > 0:
                if index == len(self.bounds):
                    return self.bounds[-1] if self.bounds else 0.0
                lower = self.bounds[index - 1] if index > 0 else 0.0
                return lower + (self.bounds[index] - lower) * (rank - seen) / count
            seen += count
        return self.bounds[-1] if self.bounds else 0.0


@dataclass(frozen=True)
class MetricFamily:
    """Every sample of one metric from one or more processes."""

    spec: MetricSpec
    samples: tuple[Sample, ...] = ()
    histograms: tuple[HistogramSample, ...] = ()

    @property
    def name(self) -> str:
        """The metric's Prometheus name."""
        return self.spec.name


class Counter:
    """A monotonically increasing count."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        """Add ``amount`` (not negative)."""
        self.value += amount


class Gauge:
    """A value that goes up and down."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        """Replace the value."""
        self.value = value

    def inc(self, amount: float = 1.0) -> None:
        """Add ``amount`` (negative to decrease)."""
        self.value += amount


class Histogram:
    """Observations counted into fixed buckets, with their sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class _OffCounter(Counter):
    """What a disabled registry hands out for a counter: updates are dropped."""

    __slots__ = ()

    def inc(self, amount: float = 1.0) -> None:
        """Drop the update."""


class _OffGauge(Gauge):
    """What a disabled registry hands out for a gauge: updates are dropped."""

    __slots__ = ()

    def set(self, value: float) -> None:
        """Drop the update."""

    def inc(self, amount: float = 1.0) -> None:
        """Drop the update."""


class _OffHistogram(Histogram):
    """A disabled registry's histogram: observations are dropped."""

    __slots__ = ()

    def observe(self, value: float) -> None:
        """Drop the observation."""


def _labels(spec: MetricSpec, values: Mapping[str, object]) -> Labels:
    if set(values) != set(spec.labels):
        raise ValueError(f"{spec.name} takes labels {spec.labels}, got {tuple(values)}")
    return tuple((name, str(values[name])) for name in spec.labels)


Instrument = TypeVar("Instrument")


def _child(
    table: dict[Labels, Instrument], key: Labels, make: Callable[[], Instrument]
) -> Instrument:
    """The instrument of ``table`` for ``key``, made on first use."""
    found = table.get(key)
    if found is None:
        found = table[key] = make()
    return found


@dataclass
class _Instruments:
    counters: dict[Labels, Counter] = field(default_factory=dict)
    gauges: dict[Labels, Gauge] = field(default_factory=dict)
    histograms: dict[Labels, Histogram] = field(default_factory=dict)
    callbacks: dict[Labels, Callable[[], float]] = field(default_factory=dict)


class MetricsRegistry:
    """The instruments of one process (or one actor), by metric and labels."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._metrics: dict[str, tuple[MetricSpec, _Instruments]] = {}

    def _instruments(self, spec: MetricSpec, kind: MetricKind) -> _Instruments:
        if spec.kind is not kind:
            raise TypeError(f"{spec.name} is a {spec.kind.value}, not a {kind.value}")
        entry = self._metrics.get(spec.name)
        if entry is None:
            entry = self._metrics[spec.name] = (spec, _Instruments())
        return entry[1]

    def counter(self, spec: MetricSpec, **labels: object) -> Counter:
        """The counter of ``spec`` for these label values, created at zero on first use."""
        if not self.enabled:
            return _OffCounter()
        counters = self._instruments(spec, MetricKind.COUNTER).counters
        return _child(counters, _labels(spec, labels), Counter)

    def gauge(self, spec: MetricSpec, **labels: object) -> Gauge:
        """The gauge of ``spec`` for these label values, created at zero on first use."""
        if not self.enabled:
            return _OffGauge()
        gauges = self._instruments(spec, MetricKind.GAUGE).gauges
        return _child(gauges, _labels(spec, labels), Gauge)

    def computed(self, spec: MetricSpec, read: Callable[[], float], **labels: object) -> None:
        """A counter or gauge whose value ``read`` computes when a snapshot is taken (sizes of
        queues and logs, counts another object keeps)."""
        if spec.kind is MetricKind.HISTOGRAM:
            raise TypeError(f"{spec.name} is a histogram; only counters and gauges are computed")
        if self.enabled:
            self._instruments(spec, spec.kind).callbacks[_labels(spec, labels)] = read

    def histogram(self, spec: MetricSpec, **labels: object) -> Histogram:
        """The histogram of ``spec`` for these label values, empty on first use."""
        if not self.enabled:
            return _OffHistogram(spec.buckets)
        histograms = self._instruments(spec, MetricKind.HISTOGRAM).histograms
        return _child(histograms, _labels(spec, labels), lambda: Histogram(spec.buckets))

    def remove(self, **labels: object) -> None:
        """Forget every instrument whose labels include all of these (a deleted partition's)."""
        wanted = {(name, str(value)) for name, value in labels.items()}
        for _spec, instruments in self._metrics.values():
            for table in (
                instruments.counters,
                instruments.gauges,
                instruments.histograms,
                instruments.callbacks,
            ):
                for key in [key for key in table if wanted <= set(key)]:
                    del table[key]

    def collect(self) -> list[MetricFamily]:
        """A snapshot of every instrument, one family per metric."""
        families = []
        for spec, instruments in self._metrics.values():
            samples = [Sample(key, c.value) for key, c in instruments.counters.items()]
            samples += [Sample(key, g.value) for key, g in instruments.gauges.items()]
            samples += [Sample(key, float(read())) for key, read in instruments.callbacks.items()]
            histograms = tuple(
                HistogramSample(key, h.bounds, tuple(h.counts), h.sum)
                for key, h in instruments.histograms.items()
            )
            families.append(MetricFamily(spec, tuple(samples), histograms))
        return families


def family(spec: MetricSpec, values: Iterable[tuple[Mapping[str, object], float]]) -> MetricFamily:
    """A family computed rather than recorded: one sample per (labels, value)."""
    return MetricFamily(
        spec, tuple(Sample(_labels(spec, labels), value) for labels, value in values)
    )


def _summed(samples: Iterable[Sample]) -> tuple[Sample, ...]:
    by_labels: dict[Labels, float] = {}
    for sample in samples:
        by_labels[sample.labels] = by_labels.get(sample.labels, 0.0) + sample.value
    return tuple(Sample(labels, value) for labels, value in by_labels.items())


def _summed_histograms(histograms: Iterable[HistogramSample]) -> tuple[HistogramSample, ...]:
    by_labels: dict[Labels, HistogramSample] = {}
    for item in histograms:
        seen = by_labels.get(item.labels)
        by_labels[item.labels] = item if seen is None else seen.plus(item)
    return tuple(by_labels.values())


def merge(groups: Iterable[Iterable[MetricFamily]]) -> list[MetricFamily]:
    """Families from several processes joined by metric name, in first-seen order; samples with
    the same labels are summed (a topic's partitions on one broker make the broker's topic
    count)."""
    joined: dict[str, list[MetricFamily]] = {}
    for group in groups:
        for item in group:
            joined.setdefault(item.name, []).append(item)
    return [
        MetricFamily(
            items[0].spec,
            _summed(sample for item in items for sample in item.samples),
            _summed_histograms(histogram for item in items for histogram in item.histograms),
        )
        for items in joined.values()
    ]


def select(families: Iterable[MetricFamily], name: str, **labels: object) -> list[Sample]:
    """The samples of metric ``name`` whose labels include all of ``labels``."""
    wanted = {(key, str(value)) for key, value in labels.items()}
    return [
        sample
        for item in families
        if item.name == name
        for sample in item.samples
        if wanted <= set(sample.labels)
    ]


def total(families: Iterable[MetricFamily], name: str, **labels: object) -> float:
    """The sum of ``name``'s samples whose labels include all of ``labels`` (0.0 when none)."""
    return sum(sample.value for sample in select(families, name, **labels))
