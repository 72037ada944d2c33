"""What a producer or consumer records about its work, and kafka-python's ``metrics()`` view of it.

Each client records into its own sensors, once per batch, request or poll and never per record:
windowed stats for kafka-python's ``metrics()`` dictionary (rates, averages and maxima over the
last ``metrics_num_samples`` windows of ``metrics_sample_window_ms``, as Kafka's sampled stats
compute them) and the instruments of a ``MetricsRegistry`` for Prometheus (``metrics_reporter``
exports them through Ray). Counters in the registry read the windowed stats' running totals when a
snapshot is taken, so a count is recorded once. ``metrics_enabled=False`` gives sensors that record
nothing and a ``metrics()`` of ``{}``.

The names are kafka-python's (``producer-metrics``, ``consumer-fetch-manager-metrics``), with the
Java clients' ``-total`` counts beside its rates. A partition's own lag is under the group
``consumer-fetch-manager-metrics.<topic>-<partition>``, as kafka-python names tagged groups
(``producer-topic-metrics.<topic>``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rafka.metrics import catalog
from rafka.metrics.registry import Gauge, MetricsRegistry
from rafka.protocol.errors import InvalidConfigError
from rafka.protocol.types import TopicPartition

PRODUCER_GROUP = "producer-metrics"
FETCH_GROUP = "consumer-fetch-manager-metrics"

MetricsView = dict[str, dict[str, float]]
"""kafka-python's ``metrics()`` shape: metric group to metric name to value."""

Clock = Callable[[], float]


@dataclass(frozen=True)
class MetricsConfig:
    """Whether a client records metrics, and the windows its rates, averages and maxima span."""

    enabled: bool = True
    num_samples: int = 2
    window_s: float = 30.0

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> MetricsConfig:
        """The settings of a client's config (kafka-python's names), checked."""
        enabled = config["metrics_enabled"]
        if not isinstance(enabled, bool):
            raise InvalidConfigError(f"metrics_enabled={enabled!r} must be True or False")
        for name in ("metrics_num_samples", "metrics_sample_window_ms"):
            value = config[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidConfigError(f"{name}={value!r} must be a positive integer")
        window_s = config["metrics_sample_window_ms"] / 1000
        return cls(enabled, config["metrics_num_samples"], window_s)


class WindowedStat:
    """Observations of one quantity over the last ``samples`` windows of ``window_s`` seconds, as
    Kafka's sampled stats keep them (a window starts at its first observation and is dropped
    ``samples`` windows later), with the count and sum of every observation ever made."""

    __slots__ = ("_counts", "_current", "_maxes", "_starts", "_sums", "count", "total", "window_s")

    def __init__(self, samples: int, window_s: float) -> None:
        self.window_s = window_s
        self._starts = [-math.inf] * samples
        self._counts = [0] * samples
        self._sums = [0.0] * samples
        self._maxes = [-math.inf] * samples
        self._current = 0
        self.count = 0
        self.total = 0.0

    def record(self, value: float, now: float) -> None:
        """Add one observation made at ``now`` (monotonic seconds)."""
        self.count += 1
        self.total += value
        current = self._current
        if now - self._starts[current] >= self.window_s:
            current = self._current = (current + 1) % len(self._starts)
            self._starts[current] = now
            self._counts[current] = 1
            self._sums[current] = value
            self._maxes[current] = value
            return
        self._counts[current] += 1
        self._sums[current] += value
        if value > self._maxes[current]:
            self._maxes[current] = value

    def _kept(self, now: float) -> list[int]:
        horizon = len(self._starts) * self.window_s
        return [i for i, start in enumerate(self._starts) if now - start < horizon]

    def _per_second(self, amount: float, kept: list[int], now: float) -> float:
        # Kafka's Rate: the time since the oldest kept window, but never less than samples - 1
        # whole windows, so a stat a second old does not read as a burst.
        elapsed = now - min((self._starts[i] for i in kept), default=now)
        whole = int(elapsed / self.window_s)
        if whole < len(self._starts) - 1:
            elapsed += (len(self._starts) - 1 - whole) * self.window_s
        return amount / elapsed if elapsed > 0 else 0.0

    def rate(self, now: float) -> float:
        """The sum of the kept observations per second."""
        kept = self._kept(now)
        return self._per_second(sum(self._sums[i] for i in kept), kept, now)

    def count_rate(self, now: float) -> float:
        """Observations per second over the kept windows."""
        kept = self._kept(now)
        return self._per_second(sum(self._counts[i] for i in kept), kept, now)

    def avg(self, now: float) -> float:
        """The mean of the kept observations; 0.0 without any (kafka-python's Avg)."""
        kept = self._kept(now)
        count = sum(self._counts[i] for i in kept)
        return sum(self._sums[i] for i in kept) / count if count else 0.0

    def max(self, now: float) -> float:
        """The largest kept observation; -inf without any (kafka-python's Max)."""
        return max((self._maxes[i] for i in self._kept(now) if self._counts[i]), default=-math.inf)


class _Sensors:
    """A client's registry, labelled by its client id, and the clock its windows run on."""

    def __init__(self, client_id: str, config: MetricsConfig, clock: Clock) -> None:
        self.client_id = client_id
        self.registry = MetricsRegistry(config.enabled)
        self._config = config
        self._clock = clock

    def _stat(self) -> WindowedStat:
        return WindowedStat(self._config.num_samples, self._config.window_s)

    def _count(self, spec: catalog.MetricSpec, stat: WindowedStat) -> None:
        """Export the running total of ``stat`` as the counter ``spec``."""
        self.registry.computed(spec, lambda: stat.total, client_id=self.client_id)


class ProducerSensors(_Sensors):
    """A producer's records and bytes sent, request round trips, retries and errors."""

    def __init__(
        self, client_id: str, config: MetricsConfig, clock: Clock = time.monotonic
    ) -> None:
        super().__init__(client_id, config, clock)
        # One produce request carries one batch, so per request is per batch.
        self._records = self._stat()
        self._bytes = self._stat()
        self._latency_ms = self._stat()
        self._retries = self._stat()
        self._errors = self._stat()
        self._batch_sizes = self.registry.histogram(catalog.CLIENT_BATCH_SIZE, client_id=client_id)
        self._latencies = self.registry.histogram(
            catalog.CLIENT_REQUEST_LATENCY, client_id=client_id
        )
        self._count(catalog.CLIENT_RECORDS_SENT, self._records)
        self._count(catalog.CLIENT_RETRIES, self._retries)
        self._count(catalog.CLIENT_RECORD_ERRORS, self._errors)

    def sent(self, records: int, size: int) -> None:
        """A produce request of ``records`` records in a batch of ``size`` bytes went out."""
        now = self._clock()
        self._records.record(records, now)
        self._bytes.record(size, now)
        self._batch_sizes.observe(size)

    def answered(self, latency_s: float) -> None:
        """A produce request was answered ``latency_s`` after it was sent."""
        latency_ms = latency_s * 1000
        self._latency_ms.record(latency_ms, self._clock())
        self._latencies.observe(latency_ms)

    def retried(self, records: int) -> None:
        """A batch of ``records`` records goes to be sent again."""
        self._retries.record(records, self._clock())

    def failed(self, records: int) -> None:
        """A batch of ``records`` records failed for good."""
        self._errors.record(records, self._clock())

    def view(self, in_flight: int) -> MetricsView:
        """kafka-python's producer metrics; ``in_flight`` requests await their answers."""
        now = self._clock()
        records, size, latency = self._records, self._bytes, self._latency_ms
        return {
            PRODUCER_GROUP: {
                "record-send-total": records.total,
                "record-send-rate": records.rate(now),
                "records-per-request-avg": records.avg(now),
                "byte-rate": size.rate(now),
                "batch-size-avg": size.avg(now),
                "batch-size-max": size.max(now),
                "request-latency-avg": latency.avg(now),
                "request-latency-max": latency.max(now),
                "record-retry-total": self._retries.total,
                "record-retry-rate": self._retries.rate(now),
                "record-error-total": self._errors.total,
                "record-error-rate": self._errors.rate(now),
                "requests-in-flight": float(in_flight),
            }
        }


class _OffProducerSensors(ProducerSensors):
    """A producer's sensors with ``metrics_enabled=False``: they record nothing."""

    def sent(self, records: int, size: int) -> None:
        """Record nothing."""

    def answered(self, latency_s: float) -> None:
        """Record nothing."""

    def retried(self, records: int) -> None:
        """Record nothing."""

    def failed(self, records: int) -> None:
        """Record nothing."""

    def view(self, in_flight: int) -> MetricsView:
        """No metrics."""
        return {}


def producer_sensors(
    client_id: str, config: MetricsConfig, clock: Clock = time.monotonic
) -> ProducerSensors:
    """A producer's sensors, recording only if ``config.enabled``."""
    kind = ProducerSensors if config.enabled else _OffProducerSensors
    return kind(client_id, config, clock)


def partition_group(tp: TopicPartition) -> str:
    """The metric group of one partition's lag."""
    return f"{FETCH_GROUP}.{tp.topic}-{tp.partition}"


class ConsumerSensors(_Sensors):
    """A consumer's fetches (round trips and bytes), records handed out, and lag per partition."""

    def __init__(
        self, client_id: str, config: MetricsConfig, clock: Clock = time.monotonic
    ) -> None:
        super().__init__(client_id, config, clock)
        self._latency_ms = self._stat()
        self._bytes = self._stat()
        self._records = self._stat()
        self._lags = self._stat()
        # Where each partition's lag is counted to (the high watermark, or the last stable offset
        # with read_committed) as of its last fetch, and its lag gauge.
        self._ends: dict[TopicPartition, int] = {}
        self._partition_lags: dict[TopicPartition, Gauge] = {}
        self._fetch_latencies = self.registry.histogram(
            catalog.CLIENT_FETCH_LATENCY, client_id=client_id
        )
        self._count(catalog.CLIENT_BYTES_CONSUMED, self._bytes)
        self._count(catalog.CLIENT_RECORDS_CONSUMED, self._records)

    def fetched(self, tp: TopicPartition, end: int, size: int, latency_s: float) -> None:
        """A fetch of ``tp`` was answered after ``latency_s`` with ``size`` bytes; the partition
        ends at ``end`` for this consumer."""
        now = self._clock()
        latency_ms = latency_s * 1000
        self._latency_ms.record(latency_ms, now)
        self._fetch_latencies.observe(latency_ms)
        self._bytes.record(size, now)
        self._ends[tp] = end

    def position(self, tp: TopicPartition, position: int) -> None:
        """``tp``'s position moved to ``position`` (records handed out, or a fetch that brought
        none): its lag is what lies between it and the partition's end."""
        end = self._ends.get(tp)
        if end is None:
            return
        lag = max(0, end - position)
        self._lags.record(lag, self._clock())
        gauge = self._partition_lags.get(tp)
        if gauge is None:
            gauge = self._partition_lags[tp] = self.registry.gauge(
                catalog.CLIENT_RECORDS_LAG,
                client_id=self.client_id,
                topic=tp.topic,
                partition=tp.partition,
            )
        gauge.set(lag)

    def consumed(self, records: int) -> None:
        """A poll handed out ``records`` records."""
        self._records.record(records, self._clock())

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions no longer assigned leave ``metrics()``; their exported lag drops to 0 rather
        than stay at its last value (a Ray gauge cannot forget a partition)."""
        for tp in partitions:
            self._ends.pop(tp, None)
            gauge = self._partition_lags.pop(tp, None)
            if gauge is not None:
                gauge.set(0)

    def view(self) -> MetricsView:
        """kafka-python's fetch-manager metrics, and each partition's lag."""
        now = self._clock()
        latency, size, records = self._latency_ms, self._bytes, self._records
        found: MetricsView = {
            FETCH_GROUP: {
                "fetch-latency-avg": latency.avg(now),
                "fetch-latency-max": latency.max(now),
                "fetch-rate": latency.count_rate(now),
                "fetch-total": float(latency.count),
                "fetch-size-avg": size.avg(now),
                "fetch-size-max": size.max(now),
                "bytes-consumed-total": size.total,
                "bytes-consumed-rate": size.rate(now),
                "records-consumed-total": records.total,
                "records-consumed-rate": records.rate(now),
                "records-lag-max": self._lags.max(now),
            }
        }
        for tp, gauge in sorted(self._partition_lags.items()):
            found[partition_group(tp)] = {"records-lag": gauge.value}
        return found


class _OffConsumerSensors(ConsumerSensors):
    """A consumer's sensors with ``metrics_enabled=False``: they record nothing."""

    def fetched(self, tp: TopicPartition, end: int, size: int, latency_s: float) -> None:
        """Record nothing."""

    def position(self, tp: TopicPartition, position: int) -> None:
        """Record nothing."""

    def consumed(self, records: int) -> None:
        """Record nothing."""

    def view(self) -> MetricsView:
        """No metrics."""
        return {}


def consumer_sensors(
    client_id: str, config: MetricsConfig, clock: Clock = time.monotonic
) -> ConsumerSensors:
    """A consumer's sensors, recording only if ``config.enabled``."""
    kind = ConsumerSensors if config.enabled else _OffConsumerSensors
    return kind(client_id, config, clock)
